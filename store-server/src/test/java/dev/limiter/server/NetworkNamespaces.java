package dev.limiter.server;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Linux network namespaces for drills that cut members off from each other: one namespace per
 * member, each with its own address on a bridge ({@code 10.213.x.m}; this JVM is {@code .254}), so
 * a partition can drop exactly the traffic between two members while both still reach the rest.
 * A cut drops packets silently, both ways, on connections already open too (policy-routing
 * blackholes on receipt, ahead of local delivery, with early demux off). Needs root and iproute2;
 * {@link #close()} removes everything it made, and a JVM that exits without closing it does so
 * from a shutdown hook.
 */
final class NetworkNamespaces implements AutoCloseable
{
    private static final int CUT_PREFERENCE = 10;

    private final String prefix;
    private final String bridge;
    private final String subnet;
    private final int members;
    private final Thread cleanup = new Thread(this::removeQuietly, "netns-cleanup");
    private boolean closed;

    /** Whether this process may make network namespaces (root with iproute2), and why not if it may not. */
    static String unavailableBecause()
    {
        final String probe = "limprobe" + Integer.toHexString(ThreadLocalRandom.current().nextInt(1 << 20));
        try
        {
            run("ip", "netns", "add", probe);
            run("ip", "netns", "del", probe);
            return null;
        }
        catch (final IOException e)
        {
            return "network namespaces need root and iproute2 ('ip netns add' failed: " + e.getMessage() + ")";
        }
    }

    /** Makes {@code members} namespaces, numbered from 1, on one bridge. */
    NetworkNamespaces(final int members) throws IOException
    {
        this.members = members;
        final String id = Integer.toHexString(0x10000 + ThreadLocalRandom.current().nextInt(0xF0000));
        this.prefix = "lim" + id;
        this.bridge = "lb" + id;
        this.subnet = freeSubnet();
        Runtime.getRuntime().addShutdownHook(cleanup);
        try
        {
            run("ip", "link", "add", bridge, "type", "bridge");
            run("ip", "addr", "add", hostAddress() + "/24", "dev", bridge);
            run("ip", "link", "set", bridge, "up");
            for (int m = 1; m <= members; m++)
            {
                final String ns = namespace(m);
                run("ip", "netns", "add", ns);
                run("ip", "-n", ns, "link", "set", "lo", "up");
                // Packets of an open connection skip the routing rules unless early demux is off.
                run("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ip_early_demux=0");
                // Local delivery after the cuts' rules (it is rule 0 otherwise, ahead of any).
                run("ip", "-n", ns, "rule", "add", "pref", "100", "lookup", "local");
                run("ip", "-n", ns, "rule", "del", "pref", "0");
                run("ip", "link", "add", veth(m), "type", "veth", "peer", "name", "eth0", "netns", ns);
                run("ip", "link", "set", veth(m), "master", bridge, "up");
                run("ip", "-n", ns, "addr", "add", address(m) + "/24", "dev", "eth0");
                run("ip", "-n", ns, "link", "set", "eth0", "up");
            }
        }
        catch (final IOException | RuntimeException e)
        {
            close();
            throw e;
        }
    }

    /** Member {@code m}'s address (1-based). */
    String address(final int m)
    {
        return subnet + m;
    }

    /** This JVM's address on the bridge: members reach it, and it reaches every member. */
    String hostAddress()
    {
        return subnet + 254;
    }

    /** {@code command} run inside member {@code m}'s namespace (the same process: {@code ip netns exec} execs it). */
    List<String> inside(final int m, final List<String> command)
    {
        final List<String> wrapped = new ArrayList<>(List.of("ip", "netns", "exec", namespace(m)));
        wrapped.addAll(command);
        return wrapped;
    }

    /** From now on nothing passes between members {@code a} and {@code b}, either way; each still reaches everyone else. */
    void cut(final int a, final int b) throws IOException
    {
        run("ip", "-n", namespace(a), "rule", "add", "pref", Integer.toString(CUT_PREFERENCE), "from", address(b), "blackhole");
        run("ip", "-n", namespace(b), "rule", "add", "pref", Integer.toString(CUT_PREFERENCE), "from", address(a), "blackhole");
    }

    /** Undoes {@link #cut}. */
    void heal(final int a, final int b) throws IOException
    {
        run("ip", "-n", namespace(a), "rule", "del", "pref", Integer.toString(CUT_PREFERENCE), "from", address(b), "blackhole");
        run("ip", "-n", namespace(b), "rule", "del", "pref", Integer.toString(CUT_PREFERENCE), "from", address(a), "blackhole");
    }

    private String namespace(final int m)
    {
        return prefix + "n" + m;
    }

    private String veth(final int m)
    {
        return prefix + "v" + m;
    }

    /** A {@code 10.213.x.} prefix no address or route of this machine uses yet. */
    private static String freeSubnet() throws IOException
    {
        final String inUse = run("ip", "-4", "-o", "addr") + run("ip", "-4", "route");
        for (int attempt = 0; attempt < 100; attempt++)
        {
            final String candidate = "10.213." + ThreadLocalRandom.current().nextInt(256) + ".";
            if (!inUse.contains(candidate))
            {
                return candidate;
            }
        }
        throw new IOException("no free 10.213.x.0/24 subnet for the drill's bridge");
    }

    /** Removes the namespaces (processes still inside keep theirs alive: stop them first) and the bridge. */
    @Override
    public synchronized void close()
    {
        if (closed)
        {
            return;
        }
        closed = true;
        removeQuietly();
        try
        {
            Runtime.getRuntime().removeShutdownHook(cleanup);
        }
        catch (final IllegalStateException shuttingDown)
        {
            // the hook runs anyway
        }
    }

    private void removeQuietly()
    {
        for (int m = 1; m <= members; m++)
        {
            runQuietly("ip", "netns", "del", namespace(m));
            runQuietly("ip", "link", "del", veth(m)); // gone with its namespace, unless a process still holds that
        }
        runQuietly("ip", "link", "del", bridge);
    }

    private static void runQuietly(final String... command)
    {
        try
        {
            run(command);
        }
        catch (final IOException ignored)
        {
            // already gone
        }
    }

    /** Runs a command to its end (at most 10 s); its output, or an IOException with it when it fails. */
    static String run(final String... command) throws IOException
    {
        final Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        try
        {
            if (!process.waitFor(10, TimeUnit.SECONDS))
            {
                process.destroyForcibly();
                throw new IOException(String.join(" ", command) + ": no answer within 10 s");
            }
        }
        catch (final InterruptedException e)
        {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException(String.join(" ", command) + ": interrupted", e);
        }
        final String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (process.exitValue() != 0)
        {
            throw new IOException(String.join(" ", command) + " exited " + process.exitValue() + ": " + output.strip());
        }
        return output;
    }
}
