package dev.limiter.server.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Linux network namespaces for drills that cut members off from each other: one namespace per
 * member, each with its own address on a bridge ({@code 10.213.x.m}; this JVM is {@code .254}), so
 * a partition can drop exactly the traffic between two members while both still reach the rest.
 * A cut drops packets silently, both ways, on connections already open too (policy-routing
 * blackholes on receipt, ahead of local delivery, with early demux off). {@link #dropInbound}
 * does the same with iptables rules inside a member's namespace, one way or both. Needs root and
 * iproute2 (iptables for {@link #dropInbound}); {@link #close()} removes everything it made
 * (the namespaces take their iptables rules with them), a JVM that exits without closing it does
 * so from a shutdown hook, and {@link #removeStale()} removes what a JVM killed before either
 * left behind: every name carries the pid of the JVM that made it.
 */
public final class NetworkNamespaces implements AutoCloseable
{
    private static final int CUT_PREFERENCE = 10;
    /**
     * The names this class gives: {@code lim<pid>x<instance>} then {@code n<m>} (a namespace), {@code v<m>} or {@code
     * b}.
     */
    private static final Pattern OWN_NAME = Pattern.compile("\\blim(\\d{1,10})x\\d+(?:[nv]\\d+|b)\\b");
    private static final AtomicInteger INSTANCES = new AtomicInteger();

    private final String prefix;
    private final String bridge;
    private final String subnet;
    private final int members;
    private final Thread cleanup = new Thread(this::removeQuietly, "netns-cleanup");
    private boolean closed;

    /** Whether this process may make network namespaces (root with iproute2), and why not if it may not. */
    public static String unavailableBecause()
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

    /** Whether iptables works inside a network namespace here, and why not if it does not. */
    public static String iptablesUnavailableBecause()
    {
        final String probe = "limprobe" + Integer.toHexString(ThreadLocalRandom.current().nextInt(1 << 20));
        try
        {
            run("ip", "netns", "add", probe);
            try
            {
                run("ip", "netns", "exec", probe, "iptables", "-w", "-S", "INPUT");
                return null;
            }
            finally
            {
                run("ip", "netns", "del", probe);
            }
        }
        catch (final IOException e)
        {
            return "iptables inside a network namespace needs root, iproute2 and the iptables package ('"
                + e.getMessage() + "')";
        }
    }

    /**
     * Removes the namespaces, veths and bridges this class made in JVMs that are gone (killed before
     * they could close them): a drill starts from a clean machine even after a crashed run. Those of
     * live JVMs (a concurrent build) are left alone.
     */
    public static void removeStale() throws IOException
    {
        final Matcher names = OWN_NAME.matcher(run("ip", "netns", "list") + "\n" + run("ip", "-o", "link"));
        final List<String> stale = new ArrayList<>();
        while (names.find())
        {
            if (ProcessHandle.of(Long.parseLong(names.group(1))).isEmpty() && !stale.contains(names.group()))
            {
                stale.add(names.group());
            }
        }
        for (final String name : stale)
        {
            if (name.matches(".*n\\d+"))
            {
                runQuietly("ip", "netns", "del", name);
            }
            else
            {
                runQuietly("ip", "link", "del", name);
            }
            System.out.println("removed " + name + ", left behind by a drill whose JVM is gone");
        }
    }

    /** Makes {@code members} namespaces, numbered from 1, on one bridge. */
    public NetworkNamespaces(final int members) throws IOException
    {
        this.members = members;
        this.prefix = "lim" + ProcessHandle.current().pid() + "x" + INSTANCES.incrementAndGet();
        this.bridge = prefix + "b";
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
    public String address(final int m)
    {
        return subnet + m;
    }

    /** This JVM's address on the bridge: members reach it, and it reaches every member. */
    String hostAddress()
    {
        return subnet + 254;
    }

    /** {@code command} run inside member {@code m}'s namespace (the same process: {@code ip netns exec} execs it). */
    public List<String> inside(final int m, final List<String> command)
    {
        final List<String> wrapped = new ArrayList<>(List.of("ip", "netns", "exec", namespace(m)));
        wrapped.addAll(command);
        return wrapped;
    }

    /**
     * From now on nothing passes between members {@code a} and {@code b}, either way; each still reaches everyone else.
     */
    public void cut(final int a, final int b) throws IOException
    {
        run("ip", "-n", namespace(a), "rule", "add", "pref", Integer.toString(CUT_PREFERENCE), "from", address(b),
            "blackhole");
        run("ip", "-n", namespace(b), "rule", "add", "pref", Integer.toString(CUT_PREFERENCE), "from", address(a),
            "blackhole");
    }

    /** Undoes {@link #cut}. */
    public void heal(final int a, final int b) throws IOException
    {
        run("ip", "-n", namespace(a), "rule", "del", "pref", Integer.toString(CUT_PREFERENCE), "from", address(b),
            "blackhole");
        run("ip", "-n", namespace(b), "rule", "del", "pref", Integer.toString(CUT_PREFERENCE), "from", address(a),
            "blackhole");
    }

    /**
     * From now on member {@code m} drops every packet from each member of {@code from}, on
     * connections already open too (an iptables rule in its namespace's INPUT chain, all added at
     * once); it still sends to them, and still reaches everyone else. Undone by {@link #clearDrops}.
     */
    public void dropInbound(final int m, final int... from) throws IOException
    {
        final StringBuilder rules = new StringBuilder("*filter\n");
        for (final int other : from)
        {
            if (other < 1 || other > members || other == m)
            {
                throw new IllegalArgumentException("member " + m + " cannot drop what member " + other
                    + " sends: members are 1 to " + members);
            }
            rules.append("-A INPUT -s ").append(address(other)).append("/32 -j DROP\n");
        }
        rules.append("COMMIT\n");
        runWithInput(rules.toString(), "ip", "netns", "exec", namespace(m), "iptables-restore", "-w", "--noflush");
    }

    /**
     * From now on every TCP connection another member opens to member {@code m}'s {@code port}
     * reaches {@code toPort} instead (an iptables REDIRECT in its namespace, for connections opened
     * later: a proxy in front of a port, say); this JVM's own connections (from the bridge) still
     * reach {@code port}. Kept until the namespaces are removed.
     */
    public void redirectFromMembers(final int m, final int port, final int toPort) throws IOException
    {
        final StringBuilder rules = new StringBuilder("*nat\n");
        for (int other = 1; other <= members; other++)
        {
            if (other != m)
            {
                rules.append("-A PREROUTING -p tcp -s ").append(address(other)).append("/32 -d ").append(address(m))
                    .append("/32 --dport ").append(port).append(" -j REDIRECT --to-ports ").append(toPort).append('\n');
            }
        }
        rules.append("COMMIT\n");
        runWithInput(rules.toString(), "ip", "netns", "exec", namespace(m), "iptables-restore", "-w", "--noflush");
    }

    /** Removes every rule {@link #dropInbound} added, in every member's namespace. */
    public void clearDrops() throws IOException
    {
        for (int m = 1; m <= members; m++)
        {
            run("ip", "netns", "exec", namespace(m), "iptables", "-w", "-F", "INPUT");
        }
    }

    /** The iptables rules of member {@code m}'s INPUT chain, as {@code iptables -S} lists them. */
    String inboundRules(final int m) throws IOException
    {
        return run("ip", "netns", "exec", namespace(m), "iptables", "-w", "-S", "INPUT");
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
        return runWithInput(null, command);
    }

    /** As {@link #run}, with {@code input} (when not null) on the command's standard input. */
    private static String runWithInput(final String input, final String... command) throws IOException
    {
        final Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        try (var stdin = process.getOutputStream())
        {
            if (input != null)
            {
                stdin.write(input.getBytes(StandardCharsets.UTF_8));
            }
        }
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
