package dev.limiter.testnodes;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One standalone store node in a JVM of its own, as {@code ./limiter} starts one: {@code java -cp
 * store-server.jar:runtime.classpath dev.limiter.server.ServerMain}, on 127.0.0.1, a port the node
 * picks (read from the line it prints when listening), its data and output in a directory the test
 * gives, or in a temporary one of its own ({@link #startWithPolicies}). For tests whose own
 * classpath cannot hold a node, such as a Spring Boot 3 application (Netty 4.1, where the node needs
 * 4.2). {@link #close()} kills it (and deletes the directory it made).
 */
public final class NodeJvm implements AutoCloseable
{
    /** System property: store-server's build directory (its {@code target}), holding the jar and runtime.classpath. */
    public static final String SERVER_TARGET = "limiter.server.target";

    private static final Pattern LISTENING = Pattern.compile("limiter store listening on ([0-9.]+:[0-9]+)");
    private static final String MAIN = "dev.limiter.server.ServerMain";

    private final Process process;
    private final String address;
    /** The temporary directory this node made for itself, deleted by close(); null when the test gave one. */
    private final Path ownDir;

    private NodeJvm(final Process process, final String address, final Path ownDir)
    {
        this.process = process;
        this.address = address;
        this.ownDir = ownDir;
    }

    /**
     * Starts a node with these policies in a temporary directory of its own, which {@link #close()}
     * deletes once the node has ended: for tests that keep nothing of the node.
     *
     * @param policies the policy file's text (JSON, as {@code config/policies.json})
     * @throws IllegalStateException naming what is missing or what the node printed, when it cannot be started
     */
    public static NodeJvm startWithPolicies(final String policies, final Duration timeout)
        throws IOException, InterruptedException
    {
        final Path dir = Files.createTempDirectory("limiter-node-jvm");
        try
        {
            return launch(dir, Files.writeString(dir.resolve("policies.json"), policies), timeout, dir);
        }
        catch (final IOException | InterruptedException | RuntimeException e)
        {
            delete(dir);
            throw e;
        }
    }

    /**
     * Starts a node with this policy file and waits, at most {@code timeout}, until it listens.
     *
     * @param workDir  a directory of the test's: the node's data and its log ({@code node.log}) go there
     * @param policies the policy file (JSON, as {@code config/policies.json})
     * @throws IllegalStateException naming what is missing or what the node printed, when it cannot be started
     */
    public static NodeJvm start(final Path workDir, final Path policies, final Duration timeout)
        throws IOException, InterruptedException
    {
        return launch(workDir, policies, timeout, null);
    }

    private static NodeJvm launch(final Path workDir, final Path policies, final Duration timeout, final Path ownDir)
        throws IOException, InterruptedException
    {
        final Path target = serverTarget();
        final List<String> command = new ArrayList<>(List.of(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED", "-Xmx256m", "-XX:+UseSerialGC",
            "-cp", classpath(target), MAIN,
            "--host", "127.0.0.1", "--port", "0", "--admin-port", "-1",
            "--data-dir", workDir.resolve("data").toString(), "--policies", policies.toString()));
        final Path log = workDir.resolve("node.log");
        final Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        final CompletableFuture<String> listening = new CompletableFuture<>();
        final Thread reader = new Thread(() -> copyOutput(process, log, listening), "node-jvm-output");
        reader.setDaemon(true);
        reader.start();
        try
        {
            return new NodeJvm(process, listening.get(timeout.toMillis(), TimeUnit.MILLISECONDS), ownDir);
        }
        catch (final ExecutionException | TimeoutException e)
        {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            throw new IllegalStateException("the node did not start listening within " + timeout + " (" +
                (e instanceof ExecutionException ? e.getCause().getMessage() : "timed out") + "); its output: " +
                (Files.exists(log) ? Files.readString(log) : "(none)"), e);
        }
    }

    private static Path serverTarget()
    {
        final String dir = System.getProperty(SERVER_TARGET);
        if (dir == null)
        {
            throw new IllegalStateException("the system property " + SERVER_TARGET +
                " must name store-server's target directory (the build sets it)");
        }
        return Path.of(dir);
    }

    private static String classpath(final Path target) throws IOException
    {
        final Path runtime = target.resolve("runtime.classpath");
        if (!Files.isRegularFile(runtime))
        {
            throw new IllegalStateException(runtime +
                " is missing: build store-server first (mvn -pl store-server package)");
        }
        try (var jars = Files.list(target))
        {
            final Path jar = jars.filter(NodeJvm::isServerJar).findFirst()
                .orElseThrow(() -> new IllegalStateException("no store-server jar in " + target + ": build it first"));
            return jar + java.io.File.pathSeparator + Files.readString(runtime).strip();
        }
    }

    private static boolean isServerJar(final Path file)
    {
        final String name = file.getFileName().toString();
        return name.startsWith("store-server-") && name.endsWith(".jar") && !name.endsWith("-tests.jar") &&
            !name.endsWith("-sources.jar");
    }

    private static void copyOutput(final Process process, final Path log, final CompletableFuture<String> listening)
    {
        try (BufferedReader lines = new BufferedReader(new InputStreamReader(process.getInputStream(),
            StandardCharsets.UTF_8)); var out = Files.newBufferedWriter(log))
        {
            String line;
            while ((line = lines.readLine()) != null)
            {
                out.write(line);
                out.newLine();
                out.flush();
                final Matcher matcher = LISTENING.matcher(line);
                if (matcher.find())
                {
                    listening.complete(matcher.group(1));
                }
            }
            listening.completeExceptionally(new IllegalStateException("the node exited with " + process.waitFor()));
        }
        catch (final IOException | InterruptedException e)
        {
            listening.completeExceptionally(e);
        }
    }

    /** The node's data address, {@code 127.0.0.1:port}. */
    public String address()
    {
        return address;
    }

    /** Kills the node (SIGKILL) and waits for its end, at most 10 s; then deletes the directory it made. */
    @Override
    public void close() throws InterruptedException, IOException
    {
        process.destroyForcibly();
        if (!process.waitFor(10, TimeUnit.SECONDS))
        {
            throw new IllegalStateException("the node's process " + process.pid() +
                " did not end within 10 s of SIGKILL");
        }
        if (ownDir != null)
        {
            delete(ownDir);
        }
    }

    private static void delete(final Path dir) throws IOException
    {
        try (var files = Files.walk(dir))
        {
            files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        }
    }
}
