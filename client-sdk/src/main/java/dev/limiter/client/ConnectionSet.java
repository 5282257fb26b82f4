package dev.limiter.client;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The client's connections to every node and which one a call goes to: with a cluster of several
 * Raft groups, the leader of the shard that holds the call's bucket ({@link ShardRouter});
 * otherwise round robin over the open ones, the node last named as leader first. Thread-safe
 * without locks (a call's thread picks; an I/O thread follows a leader hint).
 */
final class ConnectionSet
{
    private final Connection[] connections;
    /**
     * Each node's connections by {@code host:port}: a routed call looks its node up once instead of
     * comparing the address of every connection (150 of them for 50 per node on three nodes).
     */
    private final Map<String, Connection[]> byNode;
    private final AtomicInteger roundRobin = new AtomicInteger();
    /** host:port of the node last named as leader, or null. */
    private volatile String preferred;

    ConnectionSet(final List<Connection> connections)
    {
        if (connections.isEmpty())
        {
            throw new IllegalArgumentException("a client needs at least one connection");
        }
        this.connections = connections.toArray(new Connection[0]);
        for (final Connection connection : this.connections)
        {
            connection.owner(this);
        }
        final Map<String, List<Connection>> grouped = new HashMap<>();
        for (final Connection connection : this.connections)
        {
            grouped.computeIfAbsent(connection.hostPort(), k -> new ArrayList<>()).add(connection);
        }
        final Map<String, Connection[]> nodes = new HashMap<>();
        grouped.forEach((hostPort, list) -> nodes.put(hostPort, list.toArray(new Connection[0])));
        this.byNode = Map.copyOf(nodes);
    }

    /** Every connection, open or not (do not modify). */
    Connection[] all()
    {
        return connections;
    }

    /**
     * An open connection to {@code shardLeader} (the leader of the shard a call's bucket lives on,
     * "" when not known), else as {@link #pick()}.
     */
    Connection pick(final String shardLeader)
    {
        final Connection leader = open(shardLeader);
        return leader != null ? leader : pick();
    }

    /**
     * An open connection to {@code hostPort}, or null. A call made in the callback of an answer
     * from that node, on one of this client's connections, goes back on the connection the answer
     * came on: the calls a frame's answers set off leave together in one frame, with no hand-off to
     * another I/O thread, as a pipelined Redis client's would; when that connection has closed, they
     * all move to one other connection of the node ({@link #followOn}). A call made in the callback
     * of an answer from another node (its shard is led elsewhere) goes on this node's first open
     * connection on the same I/O thread ({@link #partner}): the calls that the answers read in one
     * turn of that thread send to this node leave in one frame too, with no hand-off (picked at
     * random, several groups' chained calls split into ever smaller frames: docs/sdk.md). Otherwise,
     * and when the node has no open connection on that thread, one of its connections picked at
     * random (a per-thread generator: callers on several threads share no counter), the next open
     * one after it when it is not.
     */
    Connection open(final String hostPort)
    {
        final Connection[] node = hostPort.isEmpty() ? null : byNode.get(hostPort);
        if (node == null)
        {
            return null;
        }
        final Connection answering = answering();
        if (answering == null)
        {
            return anyOpen(node, null);
        }
        final Connection followOn = followOn(answering, hostPort);
        if (followOn != null)
        {
            return followOn;
        }
        final Connection partner = partner(node);
        return partner != null ? partner : anyOpen(node, null);
    }

    /** This client's connection whose answers the calling thread is handing out now, else null. */
    private Connection answering()
    {
        final Connection answering = Connection.answeringOnThisThread();
        return answering != null && answering.owner() == this ? answering : null;
    }

    /**
     * For a call made in the callback of an answer (on this, the answering I/O thread) that is for
     * another node: {@code node}'s first open connection served by this thread; null when none is.
     */
    private static Connection partner(final Connection[] node)
    {
        for (final Connection c : node)
        {
            if (c.isActive() && c.loop().inEventLoop())
            {
                return c;
            }
        }
        return null;
    }

    /**
     * For a call made in the callback of an answer that came on {@code answering} (this client's,
     * or null when the call is made elsewhere), when that connection goes to {@code hostPort} (any
     * node when null): that connection, or, when it has closed, one other open connection of its
     * node, which the frame's other follow-on calls then join; null otherwise or when that node has
     * no open connection.
     */
    private Connection followOn(final Connection answering, final String hostPort)
    {
        if (answering == null || hostPort != null && !answering.hostPort().equals(hostPort))
        {
            return null;
        }
        if (answering.isActive())
        {
            return answering;
        }
        final Connection next = anyOpen(byNode.get(answering.hostPort()), answering);
        if (next != null)
        {
            Connection.followOnCallsTo(next);
        }
        return next;
    }

    /**
     * One of {@code node}'s connections picked at random, the next open one after it when it is not,
     * other than {@code avoid} unless it is the only open one; null when none is open.
     */
    private static Connection anyOpen(final Connection[] node, final Connection avoid)
    {
        final int n = node.length;
        int index = n == 1 ? 0 : ThreadLocalRandom.current().nextInt(n);
        for (int i = 0; i < n; i++)
        {
            final Connection c = node[index];
            if (c.isActive() && c != avoid)
            {
                return c;
            }
            index = index + 1 == n ? 0 : index + 1;
        }
        return avoid != null && avoid.isActive() ? avoid : null;
    }

    /**
     * An open connection for the next call, the leader's first (as {@link #open}); with no leader
     * known, the connection whose answer's callback makes the call, else round robin; null when none
     * is open.
     */
    Connection pick()
    {
        final String leader = preferred;
        final Connection preferredOpen = leader == null ? null : open(leader);
        if (preferredOpen != null)
        {
            return preferredOpen;
        }
        final Connection followOn = followOn(answering(), null);
        if (followOn != null)
        {
            return followOn;
        }
        final int n = connections.length;
        final int start = roundRobin.getAndIncrement() & Integer.MAX_VALUE;
        for (int i = 0; i < n; i++)
        {
            final Connection c = connections[(start + i) % n];
            if (c.isActive())
            {
                return c;
            }
        }
        return null;
    }

    /**
     * A node refused calls because it does not lead and named {@code leaderHint} (maybe empty):
     * prefer that node when this client has an open connection to it, and stop preferring the
     * refusing node. Returns whether the hint can be followed now.
     */
    boolean followLeaderHint(final Connection from, final String leaderHint)
    {
        // A hint is only worth following to a node this client has an open connection to; otherwise
        // (an election, a dead node still named, an address spelt differently) the caller backs off.
        boolean known = false;
        if (leaderHint != null && !leaderHint.isEmpty() && !leaderHint.equals(from.hostPort()))
        {
            for (final Connection c : connections)
            {
                known |= c.isActive() && c.hostPort().equals(leaderHint);
            }
        }
        if (known)
        {
            preferred = leaderHint;
        }
        else if (from.hostPort().equals(preferred))
        {
            preferred = null;
        }
        return known;
    }

    /** Number of connections open now. */
    int open()
    {
        int open = 0;
        for (final Connection connection : connections)
        {
            open += connection.isActive() ? 1 : 0;
        }
        return open;
    }

    /** A PING round trip on every open connection, each bounded by {@code deadlineNanos}; empty when none is open. */
    List<CompletableFuture<Void>> pingOpen(final long deadlineNanos)
    {
        final List<CompletableFuture<Void>> pings = new ArrayList<>();
        for (final Connection connection : connections)
        {
            if (connection.isActive())
            {
                pings.add(connection.ping(deadlineNanos));
            }
        }
        return pings;
    }

    /** The endpoints, each once, as {@code [host:port, ...]} for error messages. */
    String endpoints()
    {
        final StringBuilder sb = new StringBuilder("[");
        for (final Connection connection : connections)
        {
            final InetSocketAddress a = connection.address();
            final String s = a.getHostString() + ":" + a.getPort();
            if (sb.indexOf(s) < 0)
            {
                sb.append(sb.length() > 1 ? ", " : "").append(s);
            }
        }
        return sb.append(']').toString();
    }

    /** The failure of a call that found no open connection: which nodes, and why the first is not open. */
    LimiterUnavailableException noneOpen()
    {
        return new LimiterUnavailableException("no open connection to any limiter node " + endpoints() +
            " (reconnecting; last error: " + connections[0].lastError() + ")");
    }

    /**
     * SDK instances subscribed at the nodes as they last reported it: the largest count among these
     * connections (kept through an outage), 0 before any report. Fleet-wide emergency budgets are split by it.
     */
    int fleetInstances()
    {
        int most = 0;
        for (final Connection connection : connections)
        {
            most = Math.max(most, connection.fleetInstances());
        }
        return most;
    }
}
