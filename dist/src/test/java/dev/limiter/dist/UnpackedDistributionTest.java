package dev.limiter.dist;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The tarball {@code mvn package} built, unpacked into an empty directory outside the source tree
 * and run with nothing but Java on the PATH: its {@code bin/limiter} reports the version, runs a
 * node from {@code lib/} with the default policies of {@code config/}, and answers a decision.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class UnpackedDistributionTest
{
    private static final String VERSION = System.getProperty("limiter.version");
    private static Path home;
    private static Path install;
    private static Process node;

    @BeforeAll
    static void unpack() throws Exception
    {
        final Path tarball = Path.of(System.getProperty("limiter.tarball"));
        assertTrue(Files.isRegularFile(tarball), tarball + " was built");
        home = Files.createTempDirectory("limiter-dist");
        final Process untar = new ProcessBuilder("tar", "-xzf", tarball.toString()).directory(home.toFile())
            .redirectErrorStream(true).start();
        final String untarOutput = new String(untar.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(untar.waitFor(30, TimeUnit.SECONDS) && untar.exitValue() == 0, "tar -xzf: " + untarOutput);
        install = home.resolve("limiter-" + VERSION);
        try (Stream<Path> top = Files.list(install))
        {
            assertEquals(List.of("README.md", "bin", "config", "deploy", "docs", "lib", "ops"),
                top.map(p -> p.getFileName().toString()).sorted().toList());
        }
    }

    @AfterAll
    static void stopAndRemove() throws Exception
    {
        if (node != null)
        {
            node.destroy(); // SIGTERM: the node's shutdown hook closes it
            if (!node.waitFor(10, TimeUnit.SECONDS))
            {
                node.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        }
        if (home != null)
        {
            try (Stream<Path> all = Files.walk(home))
            {
                for (final Path p : all.sorted(Comparator.reverseOrder()).toList())
                {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    @Test
    void binLimiterRunsANodeFromLibAndAnswersADecisionWithOnlyJavaOnThePath() throws Exception
    {
        final Run version = run(home, List.of(install.resolve("bin/limiter").toString(), "--version"));
        assertEquals(0, version.exit(), version.output());
        assertTrue(version.output().startsWith("limiter " + VERSION + " (commit "), version.output());

        final int port = freePort();
        final int adminPort = freePort();
        final ProcessBuilder server = new ProcessBuilder(install.resolve("bin/limiter").toString(), "server",
            "--host", "127.0.0.1", "--port", Integer.toString(port), "--admin-port", Integer.toString(adminPort),
            "--shards", "2", "--io-threads", "1", "--data-dir", home.resolve("data").toString())
            .directory(home.toFile()).redirectErrorStream(true)
            .redirectOutput(home.resolve("node.log").toFile());
        onlyJava(server);
        server.environment().put("LIMITER_JAVA_OPTS", "-Xms64m -Xmx256m");
        node = server.start();

        final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
        final String ready = "http://127.0.0.1:" + adminPort + "/health/ready";
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        HttpResponse<String> readiness = null;
        while (System.nanoTime() < deadline && node.isAlive())
        {
            try
            {
                readiness = http.send(HttpRequest.newBuilder(URI.create(ready)).build(),
                    HttpResponse.BodyHandlers.ofString());
                if (readiness.statusCode() == 200)
                {
                    break;
                }
            }
            catch (final IOException notYet)
            {
                // not listening yet
            }
            Thread.sleep(100);
        }
        assertTrue(readiness != null && readiness.statusCode() == 200,
            "the node became ready: " + (readiness == null ? "no answer" : readiness.body()) + "\n" + log());

        final Run acquire = run(home, List.of(install.resolve("bin/limiter").toString(), "acquire",
            "--server", "127.0.0.1:" + port, "--tenant", "acme", "--route", "/v1/orders/42", "--method", "GET"));
        assertEquals(0, acquire.exit(), acquire.output());
        assertTrue(acquire.output().contains("\"allowed\":true")
            && acquire.output().contains("\"policy\":\"acme-premium\""), "a decision by config/policies.json: "
            + acquire.output());

        final Run status = run(home, List.of(install.resolve("bin/limiter").toString(), "status",
            "--server", "127.0.0.1:" + port));
        assertEquals(0, status.exit(), status.output());
        assertTrue(status.output().contains("version " + VERSION + " (commit "), status.output());

        final String metrics = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + adminPort
            + "/metrics")) .build(), HttpResponse.BodyHandlers.ofString()).body();
        assertTrue(metrics.lines().anyMatch(l -> l.startsWith("limiter_build_info{") && l.contains("version=\""
            + VERSION + "\"")), "limiter_build_info is exported");
    }

    /** A PATH of java, bash and dirname alone (what bin/limiter's node and client commands use): no Maven. */
    private static void onlyJava(final ProcessBuilder builder) throws IOException
    {
        final Path bin = home.resolve("path");
        Files.createDirectories(bin);
        link(bin.resolve("java"), Path.of(System.getProperty("java.home"), "bin", "java"));
        link(bin.resolve("bash"), Path.of("/bin/bash"));
        link(bin.resolve("dirname"), Path.of("/usr/bin/dirname"));
        builder.environment().put("PATH", bin.toString());
        builder.environment().remove("MAVEN_HOME");
        builder.environment().remove("LIMITER_ADMIN_TOKEN");
    }

    private static void link(final Path link, final Path target) throws IOException
    {
        if (!Files.exists(link, java.nio.file.LinkOption.NOFOLLOW_LINKS))
        {
            Files.createSymbolicLink(link, target.toRealPath());
        }
    }

    private record Run(int exit, String output)
    {
    }

    private static Run run(final Path dir, final List<String> command) throws Exception
    {
        final ProcessBuilder builder = new ProcessBuilder(new ArrayList<>(command)).directory(dir.toFile())
            .redirectErrorStream(true);
        onlyJava(builder);
        final Process process = builder.start();
        final byte[] out = process.getInputStream().readAllBytes();
        if (!process.waitFor(30, TimeUnit.SECONDS))
        {
            process.destroyForcibly();
        }
        return new Run(process.exitValue(), new String(out, StandardCharsets.UTF_8).trim());
    }

    private static String log() throws IOException
    {
        final Path log = home.resolve("node.log");
        return Files.exists(log) ? Files.readString(log) : "(no log)";
    }

    private static int freePort() throws IOException
    {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()))
        {
            return socket.getLocalPort();
        }
    }
}
