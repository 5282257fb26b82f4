package dev.limiter.server.testing;

import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.StatusJson;
import dev.limiter.protocol.status.GroupStatus;
import dev.limiter.protocol.status.StatusReport;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A cluster of node processes on loopback, for drills that kill or freeze whole JVMs. Close it to
 * stop (and, if frozen, resume) every process it started.
 */
public final class ProcessCluster implements AutoCloseable
{
    private final Path dir;
    private final Map<String, Process> processes = new LinkedHashMap<>();
    private final Map<String, Integer> ports = new LinkedHashMap<>();
    private final Map<String, List<String>> commands = new LinkedHashMap<>();

    /** Starts {@code size} members n1..nN, one shard each, no admin port, policies of {@link TestNode}. */
    public ProcessCluster(final Path dir, final int size) throws IOException
    {
        this(dir, size, 1);
    }

    /** The same with {@code groups} Raft groups of one shard each (shard g is group g's). */
    public ProcessCluster(final Path dir, final int size, final int groups) throws IOException
    {
        this(dir, size, groups, List.of());
    }

    /** The same, every member also started with {@code extraArguments} (say {@code --memory-first}). */
    public ProcessCluster(final Path dir, final int size, final int groups,
        final List<String> extraArguments) throws IOException
    {
        this.dir = dir;
        final int[] free = ClusterPorts.free(size, 100);
        final StringBuilder peers = new StringBuilder();
        for (int i = 1; i <= size; i++)
        {
            ports.put("n" + i, free[i - 1]);
            peers.append(i > 1 ? "," : "").append("n").append(i).append("=127.0.0.1:").append(free[i - 1]);
        }
        final Path policies = dir.resolve("policies.json");
        Files.writeString(policies, TestNode.POLICIES);
        final String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        for (final String id : ports.keySet())
        {
            final Path data = dir.resolve(id);
            Files.createDirectories(data);
            final List<String> command = new ArrayList<>(List.of(java,
                "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED", "-Xmx256m",
                // Wall-clock times and leadership changes in node.log, to see where a drill's seconds went.
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS", "-Dorg.slf4j.simpleLogger.log.dev.limiter=info",
                "-Dorg.slf4j.simpleLogger.log.org.apache.ratis.server.RaftServer$Division=info",
                "-cp", System.getProperty("java.class.path"), "dev.limiter.server.ServerMain",
                "--node-id", id, "--peers", peers.toString(), "--admin-port", "-1", "--data-dir", data.toString(),
                "--policies", policies.toString(), "--shards", Integer.toString(groups), "--raft-groups",
                    Integer.toString(groups),
                "--io-threads", "1"));
            command.addAll(extraArguments);
            commands.put(id, command);
            start(id);
        }
    }

    private void start(final String id) throws IOException
    {
        processes.put(id, new ProcessBuilder(commands.get(id)).redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve(id).resolve("node.log").toFile())).start());
    }

    /** Starts a killed member again, with its data directory: it recovers from its log and snapshot. */
    public void restart(final String id) throws IOException
    {
        start(id);
    }

    public Map<String, Integer> ports()
    {
        return ports;
    }

    public int port(final String id)
    {
        return ports.get(id);
    }

    /** The node's role from a STATUS request, or null when it does not answer within a second. */
    public String role(final String id)
    {
        final StatusReport status = status(id);
        return status == null ? null : status.getRole();
    }

    /** The node's STATUS answer, or null when it does not answer within a second. */
    private StatusReport status(final String id)
    {
        try
        {
            final RawConnection.Answer answer = RawConnection.exchange(ports.get(id), MessageType.STATUS, new byte[0],
                1000);
            return answer == null ? null : StatusJson.parse(answer.text()); // null: closed without answering (stopping)
        }
        catch (final IOException e)
        {
            return null;
        }
    }

    /** Group {@code g} as the node's STATUS answer reports it; null when it does not answer or has no such group. */
    private GroupStatus group(final String id, final int g)
    {
        final StatusReport status = status(id);
        return status == null ? null :
            status.getGroupsList().stream().filter(group -> group.getGroup() == g).findFirst().orElse(null);
    }

    /** The node's applied log index in group {@code g}, or -1 when it does not answer. */
    public long appliedIndex(final String id, final int g)
    {
        final GroupStatus group = group(id, g);
        return group == null ? -1 : group.getAppliedIndex();
    }

    /** The node's role in group {@code g} (LEADER once it decides), or null when it does not answer. */
    public String role(final String id, final int g)
    {
        final GroupStatus group = group(id, g);
        return group == null ? null : group.getRole();
    }

    /** The member that leads group {@code g}, other than {@code except}; waits up to 60 s. */
    public String awaitLeader(final String except, final int g) throws InterruptedException
    {
        final AtomicReference<String> leader = new AtomicReference<>();
        Await.until("a leader of group " + g + " other than " + except, Duration.ofSeconds(60), () ->
        {
            leader.set(ports.keySet().stream().filter(id -> !id.equals(except) && "LEADER".equals(role(id, g)))
                .findFirst().orElse(null));
            return leader.get() != null;
        }, this::logTails);
        return leader.get();
    }

    /** The member that leads and decides, other than {@code except}; waits up to 60 s. */
    public String awaitLeader(final String except) throws InterruptedException
    {
        final AtomicReference<String> leader = new AtomicReference<>();
        Await.until("a leader other than " + except, Duration.ofSeconds(60), () ->
        {
            leader.set(ports.keySet().stream().filter(id -> !id.equals(except) && "LEADER".equals(role(id))).findFirst()
                .orElse(null));
            return leader.get() != null;
        }, this::logTails);
        return leader.get();
    }

    /**
     * Each member's state and the last lines of its node.log, for a failure message: the test's
     * temporary directory is gone once the test ends, and a CI run shows only the message.
     */
    String logTails()
    {
        final StringBuilder tails = new StringBuilder();
        for (final String id : ports.keySet())
        {
            final Process process = processes.get(id);
            tails.append("\n--- ").append(id).append(process.isAlive() ? " (running)" : " (exited "
                + process.exitValue() + ")") .append(", last lines of its node.log:");
            try
            {
                final List<String> lines = Files.readAllLines(dir.resolve(id).resolve("node.log"));
                lines.subList(Math.max(0, lines.size() - 15),
                    lines.size()).forEach(line -> tails.append("\n").append(line));
            }
            catch (final IOException | RuntimeException e)
            {
                tails.append(" unreadable: ").append(e);
            }
        }
        return tails.toString();
    }

    /** SIGKILL. */
    public void kill(final String id) throws InterruptedException
    {
        processes.get(id).destroyForcibly();
        processes.get(id).waitFor(10, TimeUnit.SECONDS);
    }

    /** SIGSTOP: the process keeps its connections open and answers nothing, as behind a partition. */
    public void freeze(final String id) throws IOException, InterruptedException
    {
        signal(id, "-STOP");
    }

    /** SIGCONT. */
    void thaw(final String id) throws IOException, InterruptedException
    {
        signal(id, "-CONT");
    }

    private void signal(final String id, final String signal) throws IOException, InterruptedException
    {
        final Process kill = new ProcessBuilder("kill", signal,
            Long.toString(processes.get(id).pid())).inheritIO().start();
        if (kill.waitFor() != 0)
        {
            throw new IOException("kill " + signal + " " + id + " failed");
        }
    }

    @Override
    public void close() throws InterruptedException
    {
        for (final String id : processes.keySet())
        {
            try
            {
                thaw(id); // a frozen process cannot die of SIGKILL's cleanup otherwise on some systems
            }
            catch (final IOException alreadyGone)
            {
                // fine
            }
            processes.get(id).destroyForcibly();
        }
        for (final Process process : processes.values())
        {
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }
}
