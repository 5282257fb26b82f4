package dev.limiter.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;

/** Runs an operator command as {@code ./limiter} does and keeps what it printed, for the CLI's tests. */
final class CommandRun
{
    /** The entry point every admin command has: {@code XCommand.run(args, out, err, env, workDir)}. */
    @FunctionalInterface
    interface Command
    {
        int run(String[] args, PrintStream out, PrintStream err, Map<String, String> env, Path workDir);
    }

    private CommandRun()
    {
    }

    /** Runs {@code command} with {@code args}, the environment {@code env} and working directory {@code workDir}. */
    static PolicyCommandTest.Result capture(final Command command, final String[] args, final Map<String, String> env, final Path workDir)
    {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final int status = command.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8), env, workDir);
        return new PolicyCommandTest.Result(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }
}
