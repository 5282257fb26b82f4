package dev.limiter.envoy.api;

import org.junit.jupiter.api.Assumptions;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The repository's client examples (examples/python, examples/curl) run as a user runs them, with
 * the tools Debian ships: /usr/bin/python3 with python3-grpcio and python3-grpc-tools, and curl
 * (.ci/run installs them). Where one is absent, the test that needs it is skipped and says why.
 */
final class Examples
{
    /** Debian's interpreter, not one a version manager put first on PATH (it lacks Debian's packages). */
    static final Path PYTHON = Path.of("/usr/bin/python3");
    private static final long TIMEOUT_SECONDS = 60;

    private Examples()
    {
    }

    record Run(int exit, String output)
    {
    }

    /**
     * Skips the calling test when {@code missing} says a tool is absent, or fails it under
     * {@code LIMITER_REQUIRE_EXAMPLES=1} (.ci/run installs the tools, so there they must run).
     */
    static void assumeTools(final String missing)
    {
        if (missing != null && "1".equals(System.getenv("LIMITER_REQUIRE_EXAMPLES")))
        {
            throw new AssertionError(missing + " (LIMITER_REQUIRE_EXAMPLES=1)");
        }
        Assumptions.assumeTrue(missing == null, missing);
    }

    /** The repository's top directory (the tests run in the module's). */
    static Path root()
    {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent())
        {
            if (Files.isDirectory(dir.resolve("examples")) && Files.isDirectory(dir.resolve("wire-protocol")))
            {
                return dir;
            }
        }
        throw new IllegalStateException("no examples/ above " + Path.of("").toAbsolutePath());
    }

    /** Why the Python example cannot run here, or null when it can. */
    static String missingPython() throws IOException, InterruptedException
    {
        if (!Files.isExecutable(PYTHON))
        {
            return PYTHON + " is absent: the Python example is not run (apt-get install python3 python3-grpcio " +
                "python3-grpc-tools)";
        }
        final Run check = run(List.of(PYTHON.toString(), "-c", "import grpc, grpc_tools.protoc"), Map.of());
        return check.exit() == 0 ? null : PYTHON + " has no grpc or grpc_tools: the Python example is not run " +
            "(apt-get install python3-grpcio python3-grpc-tools): " + check.output().strip();
    }

    /** Why the curl example cannot run here, or null when it can. */
    static String missingCurl() throws IOException, InterruptedException
    {
        try
        {
            return run(List.of("curl", "--version"), Map.of()).exit() == 0 ? null
                : "curl does not run: the curl example is not run";
        }
        catch (final IOException e)
        {
            return "curl is absent: the curl example is not run (apt-get install curl)";
        }
    }

    static List<String> pythonCommand(final int grpcPort, final String token, final String tenant)
    {
        return List.of(PYTHON.toString(), root().resolve("examples/python/limiter_example.py").toString(), "--target",
            "127.0.0.1:" + grpcPort, "--token", token, "--tenant", tenant, "--route", "/v1/orders/1", "--lease-route",
                "/v1/exports",
            "--max-calls", "20");
    }

    /** Runs a command to its end (at most a minute), its output and errors together. */
    static Run run(final List<String> command, final Map<String, String> env) throws IOException, InterruptedException
    {
        final Path output = Files.createTempFile("limiter-example", ".out");
        try
        {
            final ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(output.toFile());
            builder.environment().putAll(env);
            builder.environment().put("PYTHONDONTWRITEBYTECODE", "1");
            final Process process = builder.start();
            try
            {
                if (!process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS))
                {
                    throw new AssertionError(command + " still running after " + TIMEOUT_SECONDS + " s: "
                        + Files.readString(output));
                }
            }
            finally
            {
                process.destroyForcibly().waitFor();
            }
            return new Run(process.exitValue(), Files.readString(output, StandardCharsets.UTF_8));
        }
        finally
        {
            Files.deleteIfExists(output);
        }
    }
}
