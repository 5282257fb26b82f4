package dev.limiter.server;

import dev.limiter.server.admin.AdminToken;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.UncheckedIOException;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

import static dev.limiter.server.testing.AdminCalls.call;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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

    @Test
    @Timeout(60)
    void withoutAConfiguredTokenOneIsGeneratedReadableOnlyByItsOwner() throws Exception
    {
        final Path data = dir.resolve("data");
        try (StoreServer server = TestNode.start(TestNode.config(dir, 0, 1).dataDir(data)))
        {
            final Path file = data.resolve("admin-token");
            assertTrue(Files.exists(file));
            assertEquals(Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE), Files.getPosixFilePermissions(file));
            final String token = Files.readString(file).strip();
            assertTrue(token.length() >= 32);
            assertEquals(200, call(HttpClient.newHttpClient(), server.adminPort(), "GET", "/v1/policies", null, token).statusCode());
        }
        // A restart reuses it.
        final String first = Files.readString(data.resolve("admin-token"));
        try (StoreServer server = TestNode.start(TestNode.config(dir, 0, 1).dataDir(data)))
        {
            assertEquals(first, Files.readString(data.resolve("admin-token")));
        }
        assertThrows(IllegalArgumentException.class, () -> new StoreServer(TestNode.config(dir, 0, 1).adminToken("short")));
        assertFalse(Files.exists(dir.resolve("admin-token")), "nothing written outside the data directory");

        // As ssh refuses a key others can read, a node refuses such a token file and says how to fix it.
        Files.setPosixFilePermissions(data.resolve("admin-token"), java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        final IllegalArgumentException open = assertThrows(IllegalArgumentException.class,
            () -> new StoreServer(TestNode.config(dir, 0, 1).dataDir(data)));
        assertTrue(open.getMessage().contains("chmod 600"), open.getMessage());
        assertEquals(first, Files.readString(data.resolve("admin-token")), "the file is left as it was");
    }
}
