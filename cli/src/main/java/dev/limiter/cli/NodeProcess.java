package dev.limiter.cli;

import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A store node's process on this machine, as the drills that stop nodes ({@code leader-kill},
 * {@code store-failure}) need it: found by the pid its STATUS reports, killed with SIGKILL (what
 * a crash does: no shutdown hook, no flush), and started again exactly as it was (its command
 * line, environment and working directory, read from {@code /proc} before the kill), detached
 * from the drill's terminal, its output appended to {@code <data dir>/node.log} and its new pid
 * written to {@code <data dir>/node.pid} (where {@code ./limiter cluster} looks when it stops its
 * nodes). Linux only; refuses any process that is not a node with a data directory.
 */
final class NodeProcess
{
    private static final String NODE_MAIN = "dev.limiter.server.ServerMain";

    private final String address;
    private final List<String> command;
    private final Map<String, String> environment;
    private final Path workDir;
    private final Path dataDir;
    private volatile long pid;

    private NodeProcess(final String address, final long pid, final List<String> command, final Map<String, String> environment,
        final Path workDir, final Path dataDir)
    {
        this.address = address;
        this.pid = pid;
        this.command = command;
        this.environment = environment;
        this.workDir = workDir;
        this.dataDir = dataDir;
    }

    /**
     * The process of the node at data address {@code address} whose STATUS named {@code pid}.
     *
     * @throws AdminClient.Failure saying why it cannot be stopped and restarted from here
     */
    static NodeProcess of(final String address, final long pid) throws AdminClient.Failure
    {
        final String host = address.substring(0, Math.max(0, address.lastIndexOf(':')));
        if (!isLoopback(host))
        {
            throw AdminClient.failed("the node at " + address + " is not on this machine's loopback: the drills that stop " +
                "nodes stop processes on this machine only (run them on a local cluster, ./limiter cluster)");
        }
        final Path proc = Path.of("/proc", Long.toString(pid));
        final List<String> command;
        final Map<String, String> environment = new LinkedHashMap<>();
        final Path workDir;
        try
        {
            command = split(Files.readAllBytes(proc.resolve("cmdline")));
            for (final String variable : split(Files.readAllBytes(proc.resolve("environ"))))
            {
                final int equals = variable.indexOf('=');
                if (equals > 0)
                {
                    environment.put(variable.substring(0, equals), variable.substring(equals + 1));
                }
            }
            workDir = Files.readSymbolicLink(proc.resolve("cwd"));
        }
        catch (final IOException | UnsupportedOperationException | SecurityException e)
        {
            throw AdminClient.failed("cannot read process " + pid + " (the node at " + address + ") from /proc: " + e.getMessage() +
                "; the drills that stop nodes need Linux and the nodes' user (or root)");
        }
        if (!command.contains(NODE_MAIN))
        {
            throw AdminClient.failed("process " + pid + ", which the node at " + address + " names as its own, is not a node started " +
                "from the command line (" + NODE_MAIN + ": an embedded node cannot be restarted by a drill); nothing was stopped");
        }
        final int at = command.indexOf("--data-dir");
        if (at < 0 || at + 1 >= command.size())
        {
            throw AdminClient.failed("the node at " + address + " (process " + pid + ") has no --data-dir: restarted, it would " +
                "lose what it holds; the drills that stop nodes need nodes with data directories");
        }
        return new NodeProcess(address, pid, List.copyOf(command), Map.copyOf(environment), workDir,
            workDir.resolve(command.get(at + 1)));
    }

    private static boolean isLoopback(final String host)
    {
        try
        {
            return InetAddress.getByName(host.startsWith("[") ? host.substring(1, host.length() - 1) : host).isLoopbackAddress();
        }
        catch (final UnknownHostException e)
        {
            return false;
        }
    }

    private static List<String> split(final byte[] nulSeparated)
    {
        final List<String> parts = new ArrayList<>();
        int from = 0;
        for (int i = 0; i < nulSeparated.length; i++)
        {
            if (nulSeparated[i] == 0)
            {
                parts.add(new String(nulSeparated, from, i - from, StandardCharsets.UTF_8));
                from = i + 1;
            }
        }
        if (from < nulSeparated.length)
        {
            parts.add(new String(nulSeparated, from, nulSeparated.length - from, StandardCharsets.UTF_8));
        }
        return parts;
    }

    String address()
    {
        return address;
    }

    long pid()
    {
        return pid;
    }

    Path dataDir()
    {
        return dataDir;
    }

    /**
     * SIGKILL, then waits until the process is gone (at most 10 s).
     *
     * @throws AdminClient.Failure when it did not end
     */
    void kill() throws AdminClient.Failure
    {
        final Optional<ProcessHandle> process = ProcessHandle.of(pid);
        if (process.isEmpty())
        {
            return; // already gone
        }
        process.get().destroyForcibly();
        // Polled: for a process that is not this JVM's child, onExit() noticed the end 1.4-1.8 s late,
        // and the drills time what follows a kill from when it returns.
        final long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (process.get().isAlive())
        {
            if (System.nanoTime() - end > 0)
            {
                throw AdminClient.failed("process " + pid + " (the node at " + address + ") did not end within 10 s of SIGKILL");
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2));
        }
    }

    /**
     * Starts the node again as it was started before, in a session of its own (so that a Ctrl-C
     * of the drill does not stop it), and writes its pid to {@code node.pid} in its data directory.
     *
     * @throws AdminClient.Failure when it cannot be started
     */
    void start() throws AdminClient.Failure
    {
        final List<String> detached = new ArrayList<>();
        if (Files.isExecutable(Path.of("/usr/bin/setsid")))
        {
            detached.add("/usr/bin/setsid");
        }
        detached.addAll(command);
        final ProcessBuilder builder = new ProcessBuilder(detached).directory(workDir.toFile()).redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(dataDir.resolve("node.log").toFile()))
            .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        builder.environment().clear();
        builder.environment().putAll(environment);
        try
        {
            // setsid execs the node in place: the child's pid is the node's.
            pid = builder.start().pid();
            Files.writeString(dataDir.resolve("node.pid"), pid + "\n");
        }
        catch (final IOException e)
        {
            throw AdminClient.failed("could not start the node at " + address + " again (" + String.join(" ", command) + "): " +
                e.getMessage());
        }
    }
}
