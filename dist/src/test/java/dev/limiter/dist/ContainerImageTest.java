package dev.limiter.dist;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.sun.security.auth.module.UnixSystem;
import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
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
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The OCI image {@code mvn package} built (target/limiter-image-VERSION.tar), as a container runtime would run it:
 * its layers unpacked in order into an empty root, its own Entrypoint and Cmd run inside that root as the image's
 * user ({@code unshare --root}: a chroot, with a mount and PID namespace of its own and /proc mounted in it, the
 * node its PID 1) with the listening address moved to loopback and test-chosen ports; a decision is asked of it.
 * Running needs root (and util-linux's unshare): without it that part is skipped and says why, unless
 * {@code LIMITER_REQUIRE_NETNS=1} (CI's {@code .ci/run}) makes it a failure.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class ContainerImageTest
{
    private static final String VERSION = System.getProperty("limiter.version");
    private static final String USER = "65532:65532";
    private static final String DATA = "/var/lib/limiter";
    private static Path home;
    private static OciArchive image;
    private static Path root;
    private static Process runtime;
    private static String unshare;

    @BeforeAll
    static void unpack() throws Exception
    {
        final Path archive = Path.of(System.getProperty("limiter.image.archive"));
        assertTrue(Files.isRegularFile(archive), archive + " was built");
        home = Files.createTempDirectory("limiter-image");
        image = OciArchive.open(archive, home.resolve("layout"));
        root = home.resolve("root");
        image.unpackLayers(root);
    }

    @AfterAll
    static void stopAndRemove() throws Exception
    {
        try
        {
            if (runtime != null)
            {
                stopTree(runtime);
            }
        }
        finally
        {
            // The node's /proc was mounted in its own mount namespace, gone with it: nothing here is mounted.
            if (home != null && (runtime == null || !runtime.isAlive()))
            {
                OciArchive.deleteTree(home);
            }
        }
    }

    @Test
    void theImageIsTheNodeOnAJlinkedRuntimeWithNoShellRunAsANonRootUser() throws Exception
    {
        final JsonObject run = image.runConfig();
        assertEquals("limiter:" + VERSION, image.referenceName());
        assertEquals("linux/amd64", image.architecture());
        assertEquals(USER, run.get("User").getAsString(), "a numeric user, which Kubernetes' runAsNonRoot can check");
        assertTrue(Files.readAllLines(root.resolve("etc/passwd")).contains(
            "limiter:x:65532:65532:limiter node:/var/lib/limiter:/sbin/nologin"), "the user has a name in the image");
        assertEquals(DATA, run.get("WorkingDir").getAsString());
        assertTrue(run.getAsJsonObject("Volumes").has(DATA), "the data directory is a volume");
        assertEquals(Set.of("7400/tcp", "7480/tcp", "7500/tcp"), run.getAsJsonObject("ExposedPorts").keySet());
        final JsonObject labels = run.getAsJsonObject("Labels");
        assertEquals(VERSION, labels.get("org.opencontainers.image.version").getAsString());
        assertTrue(labels.get("org.opencontainers.image.revision").getAsString().matches("[0-9a-f]{40}|unknown"),
            labels.toString());
        final List<String> entrypoint = strings(run.getAsJsonArray("Entrypoint"));
        assertEquals("/opt/java/bin/java", entrypoint.get(0));
        assertEquals("dev.limiter.server.ServerMain", entrypoint.get(entrypoint.size() - 1));

        // FROM scratch: the top-level directories are the runtime's, the C libraries', /etc and scratch space,
        // and nothing executable is there besides the Java runtime's programs and the dynamic loader.
        try (Stream<Path> top = Files.list(root))
        {
            assertEquals(Set.of("etc", "lib", "lib64", "opt", "tmp", "var"),
                top.map(p -> p.getFileName().toString()).collect(java.util.stream.Collectors.toSet()));
        }
        final Set<String> executables = new TreeSet<>();
        try (Stream<Path> all = Files.walk(root))
        {
            for (final Path p : all.filter(Files::isRegularFile).toList())
            {
                if (Files.getPosixFilePermissions(p).contains(PosixFilePermission.OTHERS_EXECUTE))
                {
                    executables.add("/" + root.relativize(p));
                }
            }
        }
        executables.removeIf(p -> p.startsWith("/opt/java/bin/") || p.startsWith("/opt/java/lib/j"));
        assertEquals(Set.of("/lib64/ld-linux-x86-64.so.2"), executables, "no shell and no other programs");
        for (final String shell : List.of("bin/sh", "bin/bash", "usr/bin/env", "bin/busybox"))
        {
            assertFalse(Files.exists(root.resolve(shell)), "no /" + shell);
        }
        assertTrue(Files.readString(root.resolve("opt/java/release")).contains("MODULES=\"java.base"),
            "a jlink'd runtime");
        assertFalse(Files.readString(root.resolve("opt/java/release")).contains("java.desktop"), "a minimal one");
    }

    @Test
    void theManifestsOfDeployK8sRunThisImageWithItsOwnEntrypointAndPorts() throws IOException
    {
        final String statefulSet = Files.readString(Path.of(System.getProperty("limiter.k8s.dir"),
            "statefulset.yaml"));
        assertTrue(statefulSet.contains("image: " + image.referenceName() + "\n"), "statefulset.yaml names "
            + image.referenceName());
        assertFalse(statefulSet.contains("command:"), "the image's Entrypoint runs; the manifest gives args only");
        for (final String port : image.runConfig().getAsJsonObject("ExposedPorts").keySet())
        {
            assertTrue(statefulSet.contains("containerPort: " + port.replace("/tcp", "")), port);
        }
        assertTrue(statefulSet.contains("runAsUser: 65532") && statefulSet.contains("fsGroup: 65532"),
            "the pod runs as the image's user and its data volume is that user's");
    }

    @Test
    void theImagesEntrypointRunsANodeInsideItsRootAsItsUserAndTheNodeDecides() throws Exception
    {
        final String unavailable = cannotRun();
        if (unavailable != null && "1".equals(System.getenv("LIMITER_REQUIRE_NETNS")))
        {
            fail("LIMITER_REQUIRE_NETNS=1 but the image cannot be run here: " + unavailable);
        }
        assumeTrue(unavailable == null, "the image is not run: " + unavailable);

        // What a runtime adds to an image's root: the device files the JVM opens, a mount point for /proc.
        Files.createDirectories(root.resolve("proc"));
        Files.createDirectories(root.resolve("dev"));
        for (final String[] device : List.of(new String[] {"null", "3"}, new String[] {"zero", "5"},
            new String[] {"random", "8"}, new String[] {"urandom", "9"}))
        {
            exec(List.of("mknod", "-m", "666", root.resolve("dev").resolve(device[0]).toString(), "c", "1",
                device[1]));
        }

        final int port = freePort();
        final int adminPort = freePort();
        final List<String> command = new ArrayList<>(List.of(unshare, "--mount", "--pid", "--fork",
            "--root=" + root, "--wd=" + image.runConfig().get("WorkingDir").getAsString(), "--mount-proc=/proc",
            "--setuid", USER.split(":")[0], "--setgid", USER.split(":")[1]));
        command.addAll(strings(image.runConfig().getAsJsonArray("Entrypoint")));
        final List<String> cmd = strings(image.runConfig().getAsJsonArray("Cmd"));
        final int host = cmd.indexOf("--host");
        assertTrue(host >= 0, "the image's Cmd names the listening address: " + cmd);
        cmd.set(host + 1, "127.0.0.1");
        command.addAll(cmd);
        command.addAll(List.of("--port", Integer.toString(port), "--admin-port", Integer.toString(adminPort),
            "--shards", "2", "--io-threads", "1"));
        final ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
            .redirectOutput(home.resolve("node.log").toFile());
        final Map<String, String> env = builder.environment();
        env.clear();
        env.putAll(image.environment());
        env.put("JDK_JAVA_OPTIONS", "-Xms64m -Xmx256m");
        runtime = builder.start();

        awaitReady(adminPort);
        final long javaPid = runtime.descendants().filter(p -> p.info().command().orElse("")
            .endsWith("/opt/java/bin/java")).findFirst().orElseThrow().pid();
        assertTrue(Files.readAllLines(Path.of("/proc", Long.toString(javaPid), "status")).stream()
            .anyMatch(l -> l.matches("Uid:\\s+65532\\s+65532\\s+65532\\s+65532")), "the node runs as 65532");
        assertTrue(Files.isDirectory(root.resolve("var/lib/limiter/raft"))
            || Files.exists(root.resolve("var/lib/limiter/admin-token")), "the node wrote its data volume");

        try (LimiterClient client = LimiterClient.builder().endpoints("127.0.0.1:" + port)
            .deadline(Duration.ofSeconds(2)).build())
        {
            final Decision decision = client.acquireBlocking(Descriptor.builder().tenant("acme").method("GET")
                .route("/v1/orders/42").build(), 1);
            assertTrue(decision.allowed(), decision.toString());
            assertEquals("acme-premium", decision.policyId(), "a decision by the image's config/policies.json");
        }
    }

    /** Why the image cannot be run here, or null. */
    private static String cannotRun()
    {
        if (new UnixSystem().getUid() != 0)
        {
            return "running an image's root as its user needs root (this is uid " + new UnixSystem().getUid() + ")";
        }
        final String path = System.getenv().getOrDefault("PATH", "/usr/bin:/bin");
        unshare = Stream.of(path.split(":")).map(d -> Path.of(d, "unshare")).filter(Files::isExecutable)
            .findFirst().map(Path::toString).orElse(null);
        return unshare == null ? "util-linux's unshare is not on the PATH" : null;
    }

    private static void awaitReady(final int adminPort) throws Exception
    {
        final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
        final URI ready = URI.create("http://127.0.0.1:" + adminPort + "/health/ready");
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
        HttpResponse<String> readiness = null;
        while (System.nanoTime() < deadline && runtime.isAlive())
        {
            try
            {
                readiness = http.send(HttpRequest.newBuilder(ready).build(), HttpResponse.BodyHandlers.ofString());
                if (readiness.statusCode() == 200)
                {
                    return;
                }
            }
            catch (final IOException notYet)
            {
                // not listening yet
            }
            Thread.sleep(100);
        }
        fail("the node in the image became ready: " + (readiness == null ? "no answer" : readiness.body())
            + "\n" + Files.readString(home.resolve("node.log")));
    }

    /** SIGTERM to the node and everything under unshare (the node shuts down cleanly), then SIGKILL to what is left. */
    private static void stopTree(final Process process) throws InterruptedException
    {
        final List<ProcessHandle> tree = new ArrayList<>(process.descendants().toList());
        tree.forEach(ProcessHandle::destroy);
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS))
        {
            tree.forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        }
        for (final ProcessHandle p : tree)
        {
            p.destroyForcibly();
            p.onExit().completeOnTimeout(p, 5, TimeUnit.SECONDS).join();
        }
    }

    private static List<String> strings(final JsonArray array)
    {
        assertNotNull(array);
        final List<String> list = new ArrayList<>();
        for (final JsonElement e : array)
        {
            list.add(e.getAsString());
        }
        return list;
    }

    private static void exec(final List<String> command) throws IOException, InterruptedException
    {
        final Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        final String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(10, TimeUnit.SECONDS) || process.exitValue() != 0)
        {
            process.destroyForcibly();
            throw new IOException(String.join(" ", command) + ": " + output);
        }
    }

    private static int freePort() throws IOException
    {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()))
        {
            return socket.getLocalPort();
        }
    }
}
