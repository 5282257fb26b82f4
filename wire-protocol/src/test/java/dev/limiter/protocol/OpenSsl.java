package dev.limiter.protocol;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Keys and certificates written by the {@code openssl} command, as operators and cert-manager make
 * them: the forms {@link Pem} must read. A test that needs it is skipped, saying so, where the
 * command is missing.
 */
final class OpenSsl
{
    private static final AtomicLong SERIALS = new AtomicLong(System.currentTimeMillis());
    private static volatile Boolean available;

    private final Path dir;

    OpenSsl(final Path dir)
    {
        assumeTrue(available(), "openssl is not installed: the key-form tests need it to write keys as operators do");
        this.dir = dir;
    }

    static boolean available()
    {
        if (available == null)
        {
            try
            {
                final Process process = new ProcessBuilder("openssl", "version").redirectErrorStream(true).start();
                available = process.waitFor(10, TimeUnit.SECONDS) && process.exitValue() == 0;
            }
            catch (final IOException | InterruptedException e)
            {
                available = false;
            }
        }
        return available;
    }

    /** Runs openssl with {@code args} in the directory; fails the test with its output if it fails. */
    void run(final String... args)
    {
        final List<String> command = new ArrayList<>();
        command.add("openssl");
        command.addAll(List.of(args));
        try
        {
            final Process process = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
            final byte[] output = process.getInputStream().readAllBytes();
            if (!process.waitFor(30, TimeUnit.SECONDS) || process.exitValue() != 0)
            {
                throw new AssertionError(String.join(" ", command) + " failed: " + new String(output, StandardCharsets.UTF_8));
            }
        }
        catch (final IOException e)
        {
            throw new AssertionError("cannot run " + String.join(" ", command), e);
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    Path file(final String name)
    {
        return dir.resolve(name);
    }

    /** An RSA key, PKCS#8 ({@code BEGIN PRIVATE KEY}). */
    Path rsaKey(final String name)
    {
        run("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", name);
        return file(name);
    }

    /** A P-256 key, PKCS#8. */
    Path ecKey(final String name)
    {
        run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", name);
        return file(name);
    }

    /** The same key as PKCS#1 ({@code BEGIN RSA PRIVATE KEY}), as {@code openssl genrsa} and cert-manager write it. */
    Path pkcs1(final Path rsaKey, final String name)
    {
        run("rsa", "-in", rsaKey.toString(), "-traditional", "-out", name);
        return file(name);
    }

    /** The same key as SEC1 ({@code BEGIN EC PRIVATE KEY}). */
    Path sec1(final Path ecKey, final String name)
    {
        run("ec", "-in", ecKey.toString(), "-out", name);
        return file(name);
    }

    /** A self-signed certificate for {@code key}, naming 127.0.0.1 and localhost. */
    Path selfSigned(final Path key, final String commonName, final String name)
    {
        run("req", "-x509", "-key", key.toString(), "-subj", "/CN=" + commonName, "-days", "1", "-set_serial", serial(),
            "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-out", name);
        return file(name);
    }

    /** A certificate for {@code key} signed by the CA {@code caCertificate} / {@code caKey}. */
    Path signed(final Path key, final String commonName, final Path caCertificate, final Path caKey, final String name)
    {
        run("req", "-new", "-key", key.toString(), "-subj", "/CN=" + commonName, "-out", name + ".csr");
        run("x509", "-req", "-in", name + ".csr", "-CA", caCertificate.toString(), "-CAkey", caKey.toString(), "-set_serial", serial(),
            "-days", "1", "-extfile", writeExtensions(), "-out", name);
        return file(name);
    }

    /** A CA certificate (self-signed, CA:true) for {@code key}. */
    Path ca(final Path key, final String commonName, final String name)
    {
        run("req", "-x509", "-key", key.toString(), "-subj", "/CN=" + commonName, "-days", "1", "-set_serial", serial(),
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-out", name);
        return file(name);
    }

    private String writeExtensions()
    {
        final Path file = dir.resolve("leaf.ext");
        try
        {
            Files.writeString(file, "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n");
        }
        catch (final IOException e)
        {
            throw new AssertionError(e);
        }
        return file.toString();
    }

    private static String serial()
    {
        return Long.toString(SERIALS.incrementAndGet());
    }
}
