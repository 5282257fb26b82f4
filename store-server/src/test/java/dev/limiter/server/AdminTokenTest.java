package dev.limiter.server;

import dev.limiter.server.admin.AdminToken;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** Where a node's admin token comes from when none is given: its data directory's token file. */
class AdminTokenTest
{
    @TempDir
    Path dir;

    @BeforeEach
    void noTokenInTheEnvironment()
    {
        assumeTrue(System.getenv("LIMITER_ADMIN_TOKEN") == null, "LIMITER_ADMIN_TOKEN is set: it would be used instead of the file");
    }

    @Test
    void aFirstStartWritesATokenOnlyItsOwnerCanReadAndLaterStartsReadIt() throws Exception
    {
        final Path data = dir.resolve("data");
        final String token = AdminToken.resolve(true, null, data);
        assertTrue(token.matches("[0-9a-f]{64}"), token);
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(data.resolve("admin-token"))));
        assertEquals(token, AdminToken.resolve(true, null, data));
    }

    @Test
    void aDataDirectoryThatIsAFileIsRefusedSayingSo() throws Exception
    {
        // It once recursed until the stack overflowed: the file's FileAlreadyExistsException was taken for a race.
        final Path file = Files.writeString(dir.resolve("not-a-directory"), "x");
        final UncheckedIOException refused = assertThrows(UncheckedIOException.class, () -> AdminToken.resolve(true, null, file));
        assertTrue(refused.getMessage().contains(file + " is a file, not a directory: point --data-dir at a directory"), refused.getMessage());
    }
}
