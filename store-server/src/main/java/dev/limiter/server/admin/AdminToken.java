package dev.limiter.server.admin;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The admin API's bearer token: {@code --admin-token}, else the environment variable
 * {@value #ENVIRONMENT}, else the one in {@code <data dir>/admin-token}, generated there (readable
 * only by its owner) the first time.
 */
public final class AdminToken
{
    static final String ENVIRONMENT = "LIMITER_ADMIN_TOKEN";
    static final String FILE_NAME = "admin-token";
    private static final Logger LOG = LoggerFactory.getLogger(AdminToken.class);
    private static final Pattern ALLOWED = Pattern.compile("[A-Za-z0-9._~+/=-]{16,256}");

    private AdminToken()
    {
    }

    /**
     * The token to require, or null when the admin port is off: the one given (--admin-token), else
     * $LIMITER_ADMIN_TOKEN, else the data directory's token file (made on first start).
     */
    public static String resolve(final boolean adminPortOn, final String given, final Path dataDir)
    {
        if (!adminPortOn)
        {
            return null;
        }
        if (given != null)
        {
            return check(given, "--admin-token");
        }
        final String fromEnvironment = System.getenv(ENVIRONMENT);
        if (fromEnvironment != null && !fromEnvironment.isBlank())
        {
            return check(fromEnvironment.strip(), ENVIRONMENT);
        }
        return fromFile(dataDir.resolve(FILE_NAME));
    }

    private static String check(final String token, final String source)
    {
        if (!ALLOWED.matcher(token).matches())
        {
            throw new IllegalArgumentException(source + ": an admin token must be 16 to 256 characters of A-Z a-z 0-9 . _ ~ + / = -");
        }
        return token;
    }

    private static String fromFile(final Path file)
    {
        try
        {
            if (Files.exists(file))
            {
                requirePrivate(file);
                return check(Files.readString(file, StandardCharsets.US_ASCII).strip(), file.toString());
            }
            if (Files.exists(file.getParent()) && !Files.isDirectory(file.getParent()))
            {
                throw new IOException(file.getParent() + " is a file, not a directory: point --data-dir at a directory");
            }
            Files.createDirectories(file.getParent());
            final byte[] random = new byte[32];
            new SecureRandom().nextBytes(random);
            final String token = HexFormat.of().formatHex(random);
            try
            {
                Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            }
            catch (final UnsupportedOperationException notPosix)
            {
                Files.createFile(file);
            }
            catch (final FileAlreadyExistsException raced)
            {
                return fromFile(file); // another node of this machine created it meanwhile: read it
            }
            Files.writeString(file, token + "\n", StandardCharsets.US_ASCII);
            LOG.info("admin API token generated in {} (readable only by its owner); ./limiter policy reads it from there", file);
            return token;
        }
        catch (final IOException e)
        {
            throw new UncheckedIOException("cannot read or create the admin token " + file + ": " + e.getMessage() +
                " (or pass --admin-token / set " + ENVIRONMENT + ")", e);
        }
    }

    /**
     * Refuses a token file that others may read, as ssh refuses such a key: a token anybody on the
     * host can read is no credential.
     *
     * @throws IllegalArgumentException saying how to fix it
     */
    static void requirePrivate(final Path file) throws IOException
    {
        final Set<PosixFilePermission> permissions;
        try
        {
            permissions = Files.getPosixFilePermissions(file);
        }
        catch (final UnsupportedOperationException notPosix)
        {
            return; // no POSIX modes to check on this file system
        }
        final Set<PosixFilePermission> open = EnumSet.copyOf(permissions);
        open.retainAll(EnumSet.of(PosixFilePermission.GROUP_READ,
            PosixFilePermission.GROUP_WRITE, PosixFilePermission.OTHERS_READ,
            PosixFilePermission.OTHERS_WRITE));
        if (!open.isEmpty())
        {
            throw new IllegalArgumentException("the admin token file " + file + " is accessible by others (" +
                PosixFilePermissions.toString(permissions) + "); make it readable only by its owner: chmod 600 " + file);
        }
    }

    /** Constant-time comparison of an {@code Authorization} header with the token. */
    public static boolean accepts(final String token, final String authorization)
    {
        if (token == null || authorization == null || !authorization.regionMatches(true, 0, "Bearer ", 0, 7))
        {
            return false;
        }
        return MessageDigest.isEqual(token.getBytes(StandardCharsets.US_ASCII),
            authorization.substring(7).strip().getBytes(StandardCharsets.US_ASCII));
    }
}
