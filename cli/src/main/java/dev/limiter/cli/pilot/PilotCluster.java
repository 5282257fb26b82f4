package dev.limiter.cli.pilot;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * The pilot's own 3-node cluster: node processes on 127.0.0.1 (free ports below the ephemeral range,
 * each Raft port its data port + 100), data and logs under the output directory, a permissive default
 * policy (the pilot's policy is put through the admin API). {@link #close()} stops every node it
 * started and every node a drill restarted (their pids are in {@code <data dir>/node.pid}).
 */
final class PilotCluster implements AutoCloseable
{
    private static final int RAFT_OFFSET = 100;
    private static final int NODES = 3;

    private final List<Process> started = new ArrayList<>();
    private final List<Path> dataDirs = new ArrayList<>();
    private final List<String> servers = new ArrayList<>();
    private final List<String> admins = new ArrayList<>();

    List<String> servers()
    {
        return List.copyOf(servers);
    }

    List<String> admins()
    {
        return List.copyOf(admins);
    }

    /**
     * Starts three nodes with {@code classpath} (the store server's) and {@code jvmFlags}, waits until
     * one decides (at most 60 s), and returns the cluster; on any failure stops what it started.
     */
    static PilotCluster start(final Path dir, final String classpath, final List<String> jvmFlags, final String token)
        throws IOException
    {
        final PilotCluster cluster = new PilotCluster();
        try
        {
            cluster.launch(dir, classpath, jvmFlags, token);
            cluster.awaitDeciding(Duration.ofSeconds(60));
            return cluster;
        }
        catch (final IOException | RuntimeException e)
        {
            cluster.close();
            throw e;
        }
    }

    private void launch(final Path dir, final String classpath, final List<String> jvmFlags,
        final String token) throws IOException
    {
        final int[] data = freePorts(NODES, RAFT_OFFSET);
        final int[] admin = freePorts(NODES, 0);
        final Path policies = Files.createDirectories(dir).resolve("policies.json");
        Files.writeString(policies, "{\"version\":1,\"policies\":[],\"defaultPolicy\":{\"id\":\"pilot-default\"," +
            "\"rate\":100000,\"burst\":100000,\"scope\":\"TENANT\",\"owner\":\"pilot\",\"reason\":" +
            "\"the pilot's cluster: no limit unless a " +
            "policy says so\"}}\n", StandardCharsets.UTF_8);
        final StringBuilder peers = new StringBuilder();
        for (int i = 0; i < NODES; i++)
        {
            peers.append(i > 0 ? "," : "").append("n").append(i + 1).append("=127.0.0.1:").append(data[i]);
        }
        final String java = ProcessHandle.current().info().command()
            .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        for (int i = 0; i < NODES; i++)
        {
            final Path node = Files.createDirectories(dir.resolve("n" + (i + 1)));
            final List<String> command = new ArrayList<>(List.of(java));
            command.addAll(jvmFlags);
            command.addAll(List.of("-cp", classpath, "dev.limiter.server.ServerMain", "--node-id", "n" + (i + 1),
                "--peers", peers.toString(), "--admin-port", String.valueOf(admin[i]), "--data-dir", node.toString(),
                "--policies", policies.toString()));
            final ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(node.resolve("node.log").toFile()));
            builder.environment().put("LIMITER_ADMIN_TOKEN", token);
            final Process process = builder.start();
            started.add(process);
            dataDirs.add(node);
            Files.writeString(node.resolve("node.pid"), process.pid() + "\n");
            servers.add("127.0.0.1:" + data[i]);
            admins.add("127.0.0.1:" + admin[i]);
        }
    }

    private void awaitDeciding(final Duration within) throws IOException
    {
        final long end = System.nanoTime() + within.toNanos();
        try (LimiterClient client = LimiterClient.builder().endpoints(servers.toArray(String[]::new))
            .deadline(Duration.ofMillis(500)).build())
        {
            while (System.nanoTime() < end)
            {
                if (decides(client))
                {
                    return;
                }
                if (started.stream().noneMatch(Process::isAlive))
                {
                    break;
                }
                sleep(200);
            }
        }
        throw new IOException("the pilot's nodes did not decide within " + within.toSeconds() + " s; their logs: " +
            dataDirs.stream().map(d -> d.resolve("node.log").toString()).toList());
    }

    /** Whether a node decides a call now (a call fails while no node accepts connections yet). */
    private static boolean decides(final LimiterClient client)
    {
        try
        {
            final Decision decision = client.acquireBlocking(Descriptor.of("pilot-ready", "/pilot/ready"), 1);
            return !decision.degraded();
        }
        catch (final RuntimeException e)
        {
            return false;
        }
    }

    @Override
    public void close()
    {
        final List<ProcessHandle> all = new ArrayList<>();
        started.forEach(p -> all.add(p.toHandle()));
        for (final Path data : dataDirs)
        {
            restarted(data).ifPresent(all::add);
        }
        all.forEach(ProcessHandle::destroy);
        for (final ProcessHandle process : all)
        {
            try
            {
                process.onExit().get(20, TimeUnit.SECONDS);
            }
            catch (final Exception e)
            {
                process.destroyForcibly();
            }
        }
    }

    /**
     * The node a drill started again in {@code data} (its pid in node.pid), if it is alive and its command line
     * names this data directory. The command line is read whole from /proc: a check through
     * {@link ProcessHandle.Info#arguments()} missed the restarted nodes here (their command lines carry a whole
     * classpath), and they outlived the pilot.
     */
    private static Optional<ProcessHandle> restarted(final Path data)
    {
        try
        {
            final long pid = Long.parseLong(Files.readString(data.resolve("node.pid")).strip());
            final String commandLine = new String(Files.readAllBytes(Path.of("/proc", String.valueOf(pid), "cmdline")),
                StandardCharsets.UTF_8).replace('\0', ' ');
            if (!commandLine.contains("dev.limiter.server.ServerMain") || !commandLine.contains(" " + data + " "))
            {
                return Optional.empty();
            }
            return ProcessHandle.of(pid);
        }
        catch (final IOException | NumberFormatException e)
        {
            return Optional.empty();
        }
    }

    /**
     * {@code count} consecutive loopback ports, each with port + {@code offset} free too (offset 0: just the ports).
     */
    static int[] freePorts(final int count, final int offset)
    {
        for (int attempt = 0; attempt < 1_000; attempt++)
        {
            final int base = 10_000 + ThreadLocalRandom.current().nextInt(20_000 - offset - count);
            boolean free = true;
            for (int i = 0; i < count && free; i++)
            {
                free = bindable(base + i) && (offset == 0 || bindable(base + i + offset));
            }
            if (free)
            {
                final int[] ports = new int[count];
                for (int i = 0; i < count; i++)
                {
                    ports[i] = base + i;
                }
                return ports;
            }
        }
        throw new IllegalStateException("no " + count + " free loopback ports between 10000 and 30000");
    }

    private static boolean bindable(final int port)
    {
        try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress()))
        {
            return true;
        }
        catch (final IOException e)
        {
            return false;
        }
    }

    private static void sleep(final long millis)
    {
        try
        {
            Thread.sleep(millis);
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
    }
}
