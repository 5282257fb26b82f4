package dev.limiter.cli;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Function;

/**
 * A {@code ./limiter} command that talks to the nodes' admin API, and how every such command is run:
 * made for the {@link AdminClient.Io} it prints to and reads its token from, then parsed and run by
 * {@link AdminClient#execute} (one-line failures after the command's prefix, and its exit status).
 * Each command keeps its own {@code run} (for tests and the pilot) and {@code main} (for the
 * {@code ./limiter} script), both one line on top of this.
 */
abstract class AdminCommand implements Callable<Integer>
{
    /** Where the command prints, its environment and working directory. */
    final AdminClient.Io io;

    AdminCommand(final AdminClient.Io io)
    {
        this.io = io;
    }

    /**
     * Runs the command {@code command} makes with these arguments.
     *
     * @param command makes the command for its streams, environment and working directory
     * @param prefix  what each one-line failure report starts with ("limiter exempt: ")
     * @param out     where answers go
     * @param err     where the one-line failure report goes
     * @param env     the environment (for LIMITER_ADMIN_TOKEN)
     * @param workDir the directory data/admin-token and relative paths are read from
     * @return the command's exit status
     */
    static int run(final Function<AdminClient.Io, AdminCommand> command, final String prefix, final String[] args,
        final PrintStream out, final PrintStream err, final Map<String, String> env, final Path workDir)
    {
        final AdminClient.Io io = new AdminClient.Io(out, err, env, workDir);
        return AdminClient.execute(command.apply(io), prefix, args, io);
    }

    /**
     * Runs {@code command} with this process's streams, environment and working directory, and exits
     * the process with its status: the body of every admin command's {@code main}.
     */
    static void exit(final Entry command, final String[] args)
    {
        System.exit(command.run(args, System.out, System.err, System.getenv(), Path.of("")));
    }

    /** An admin command's entry point, {@code run(args, out, err, env, workDir)}. */
    @FunctionalInterface
    interface Entry
    {
        int run(String[] args, PrintStream out, PrintStream err, Map<String, String> env, Path workDir);
    }

    /**
     * A command whose work is in its subcommands ({@code ./limiter exempt add|list|remove}): given
     * none, it says what to do and exits 2 (bad input) with nothing sent.
     */
    abstract static class Group extends AdminCommand
    {
        private final String whatToDo;

        /**
         * @param whatToDo the usage failure without a subcommand, e.g. "say what to do: add or list
         *                 (see ./limiter appeal --help)"
         */
        Group(final AdminClient.Io io, final String whatToDo)
        {
            super(io);
            this.whatToDo = whatToDo;
        }

        @Override
        public final Integer call() throws AdminClient.Failure
        {
            throw AdminClient.usage(whatToDo);
        }
    }
}
