package dev.limiter.envoy.api;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The token file: a token alone may ask for any tenant, one followed by tenants for those only; bad lines named. */
class BearerTokensTest
{
    private static final String ANY = "any-tenant-token-0123";
    private static final String BOUND = "bound-token-abcdefghij";

    @TempDir
    Path dir;

    private BearerTokens read(final String content) throws IOException
    {
        return BearerTokens.read(Files.writeString(dir.resolve("tokens"), content));
    }

    private String refusal(final String content)
    {
        return assertThrows(IllegalArgumentException.class, () -> read(content)).getMessage();
    }

    @Test
    void aTokenAloneMayAskForAnyTenantAndABoundOneForItsTenantsOnly() throws IOException
    {
        final BearerTokens tokens = read("# comment\n\n" + ANY + "\n  " + BOUND + "\tacme,globex  \n");

        assertTrue(tokens.grantOf("Bearer " + ANY).allows("anyone"));
        final TenantGrant bound = tokens.grantOf("bearer " + BOUND);
        assertTrue(bound.allows("acme"));
        assertTrue(bound.allows("globex"));
        assertFalse(bound.allows("initech"));
        assertFalse(bound.allows("ACME"), "tenants are case-sensitive");
        assertEquals(0, tokens.refused());
    }

    @Test
    void aMissingOrWrongTokenHasNoGrantAndIsCounted() throws IOException
    {
        final BearerTokens tokens = read(BOUND + " acme\n");

        assertNull(tokens.grantOf(null));
        assertNull(tokens.grantOf("Basic " + BOUND));
        assertNull(tokens.grantOf("Bearer " + BOUND + "x"));
        assertNull(tokens.grantOf("Bearer acme"));
        assertEquals(4, tokens.refused());
    }

    @Test
    void badLinesAreRefusedNamingTheLineAndWhatToDo()
    {
        assertTrue(refusal(ANY + " acme globex\n").contains("line 1: a line is a token, then optionally the tenants"));
        assertTrue(refusal(ANY + "\n" + ANY + " acme\n").contains("line 2: this token is on an earlier line too"));
        assertTrue(refusal(BOUND + " acme,,globex\n").contains("line 1: an empty tenant in 'acme,,globex'"));
        assertTrue(refusal(BOUND + " acme,\n").contains("an empty tenant"));
        assertTrue(refusal(BOUND + " " + "t".repeat(65) + "\n").contains("cannot be granted (at most 64 bytes"));
        assertTrue(refusal(BOUND + " ac\u0085me\n").contains("cannot be granted"));
        assertTrue(refusal("short acme\n").contains("line 1: a token is at least 16"));
        assertTrue(refusal("# only a comment\n").contains("holds no token"));
    }
}
