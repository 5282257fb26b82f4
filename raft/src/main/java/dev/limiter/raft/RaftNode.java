package dev.limiter.raft;

import org.apache.ratis.conf.Parameters;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.grpc.GrpcConfigKeys;
import org.apache.ratis.grpc.GrpcTlsConfig;
import org.apache.ratis.grpc.server.GrpcServerProtocolClient;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.GroupManagementRequest;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.server.RaftServerRpcWithProxy;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.util.SizeInBytes;
import org.apache.ratis.util.TimeDuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One member of a cluster, on Apache Ratis (gRPC transport): one Raft server hosting one or more
 * Raft groups (Ratis divisions, {@link RaftGroupMember}), each with its own log, leader, cluster
 * clock and {@link ReplicatedStateMachine}, all on one Raft port. The application submits payloads
 * to a group on its leader; they are stamped with that group's clock, replicated, committed on a
 * quorum and applied, in log order, on every member. Snapshots are taken per group automatically
 * every {@link RaftNodeConfig#snapshotEveryEntries()} entries, after which the group's log is
 * purged; a member that falls behind the purged log receives a snapshot. A restarted member
 * recovers every group from its latest snapshot plus its log.
 *
 * <p>With several groups every member belongs to all of them, and each group prefers one member
 * as its leader (round robin over the members sorted by id): twice a second the leader of a group
 * that is not its preferred member hands the lead over (a Ratis leadership transfer) once that
 * member answers, so leadership is spread evenly and returns to the preferred member after a
 * failover. Not Ratis priorities: with those, members refuse to elect anyone while the preferred
 * member lives but does not campaign (a member started with {@code --join} waits a day for its
 * first election), and a group could stay without a leader.
 */
public final class RaftNode implements AutoCloseable
{
    private static final Logger LOG = LoggerFactory.getLogger(RaftNode.class);
    private final RaftNodeConfig config;
    private final List<RaftGroupMember> groups = new ArrayList<>();
    private final RaftPeerId selfId;
    private final RaftProperties clientProperties = new RaftProperties();
    private final Parameters clientParameters = new Parameters();
    private volatile RaftServer server;
    /** How often a group's leader checks whether to hand the lead to the group's preferred member. */
    private static final long REBALANCE_MILLIS = 500;
    private ScheduledExecutorService rebalancer;
    /** Writes every group's snapshots to disk, off the apply threads; null when a caller supplied its own. */
    private final ExecutorService ownSnapshotWriter;

    /** A node with one group. */
    public RaftNode(final RaftNodeConfig config, final ReplicatedStateMachine application)
    {
        this(config, List.of(application));
    }

    /**
     * A node with one group per application, in order: group 0 is {@code applications.get(0)}'s.
     * Every member of a cluster must host the same number of groups.
     */
    public RaftNode(final RaftNodeConfig config, final List<? extends ReplicatedStateMachine> applications)
    {
        this(config, applications, null);
    }

    /** As above; {@code snapshotWriter} (tests) runs the disk half of snapshots instead of the node's own thread. */
    RaftNode(final RaftNodeConfig config, final List<? extends ReplicatedStateMachine> applications, final Executor snapshotWriter)
    {
        this.config = config.validate();
        if (applications.isEmpty())
        {
            throw new IllegalArgumentException("a node needs at least one group");
        }
        this.selfId = RaftPeerId.valueOf(config.nodeId());
        this.ownSnapshotWriter = snapshotWriter != null ? null : Executors.newSingleThreadExecutor(r ->
        {
            final Thread thread = new Thread(r, config.nodeId() + "-snapshot-writer");
            thread.setDaemon(true);
            return thread;
        });
        final Executor writer = snapshotWriter != null ? snapshotWriter : ownSnapshotWriter;
        for (int g = 0; g < applications.size(); g++)
        {
            final RaftGroup group = RaftGroup.valueOf(groupId(config.groupName(), g), peers(config.peers()));
            final StampedStateMachine machine = new StampedStateMachine(applications.get(g), config.nodeId(), writer);
            machine.addListener((leader, self) -> reconnectPeersNow());
            groups.add(new RaftGroupMember(g, group, machine, config.nodeId(), this::server, () -> clientProperties,
                () -> clientParameters));
        }
    }

    /**
     * Makes this member's channels to its peers try to connect now rather than when gRPC's back-off
     * ends. While a peer is down its channel backs off for up to seconds (1 s, then 1.6x each try),
     * and meanwhile every request on it fails at once, vote requests included: when a leader dies
     * soon after another member came back, the survivors cannot reach that member for their
     * pre-votes until the back-off ends, and the election waits for it (docs/cluster.md, the
     * ten-kill drill). Called on every
     * leader change (a lost leader first of all, just before this member campaigns); a connected
     * channel is not touched.
     */
    private void reconnectPeersNow()
    {
        final RaftServer running = server;
        if (running == null || !(running.getServerRpc() instanceof RaftServerRpcWithProxy<?, ?> rpc))
        {
            return;
        }
        for (final String peer : config.peers().keySet())
        {
            if (peer.equals(config.nodeId()))
            {
                continue;
            }
            try
            {
                if (rpc.getProxies().getProxy(RaftPeerId.valueOf(peer)) instanceof GrpcServerProtocolClient channel)
                {
                    channel.resetConnectBackoff();
                }
            }
            catch (final IOException | RuntimeException e)
            {
                LOG.debug("{}: could not hurry the channel to {}: {}", config.nodeId(), peer, e.toString());
            }
        }
    }

    /**
     * The member that group {@code g} prefers as leader: round robin over the member ids in sorted
     * order, so N groups on N members give each member one group to lead.
     */
    public static String preferredLeader(final Collection<String> memberIds, final int g)
    {
        final List<String> sorted = memberIds.stream().sorted().toList();
        return sorted.get(g % sorted.size());
    }

    /**
     * The id of group {@code g}: every member derives it from the group name (group 0 keeps the id
     * a single-group node always had, so its data directory stays valid).
     */
    static RaftGroupId groupId(final String groupName, final int g)
    {
        final String name = g == 0 ? groupName : groupName + "#" + g;
        return RaftGroupId.valueOf(UUID.nameUUIDFromBytes(("limiter-group:" + name).getBytes(StandardCharsets.UTF_8)));
    }

    /** Peers for a group configuration. */
    static List<RaftPeer> peers(final Map<String, InetSocketAddress> peers)
    {
        final List<RaftPeer> list = new ArrayList<>();
        peers.forEach((id, address) -> list.add(RaftPeer.newBuilder().setId(id)
            .setAddress(address.getHostString() + ":" + address.getPort()).build()));
        return list;
    }

    private RaftServer server()
    {
        final RaftServer current = server;
        if (current == null)
        {
            throw new IllegalStateException("node " + config.nodeId() + " is not running");
        }
        return current;
    }

    /** Whether the running server acknowledges entries before their sync (Ratis' unsafe flush), as {@link RaftNodeConfig#memoryFirst()} asked. */
    boolean acknowledgesBeforeSync()
    {
        return RaftServerConfigKeys.Log.unsafeFlushEnabled(server().getProperties());
    }

    /** The least time Ratis leaves between two appends to a follower (0: none), in nanoseconds. */
    long appenderWaitMinNanos()
    {
        return RaftServerConfigKeys.Log.Appender.waitTimeMin(server().getProperties()).toLong(TimeUnit.NANOSECONDS);
    }

    /** Ratis' minimum and maximum election timeouts and its leader step-down wait, in milliseconds, as this server runs them. */
    long[] electionTimingMillis()
    {
        final RaftProperties properties = server().getProperties();
        return new long[] {RaftServerConfigKeys.Rpc.timeoutMin(properties).toLong(TimeUnit.MILLISECONDS),
            RaftServerConfigKeys.Rpc.timeoutMax(properties).toLong(TimeUnit.MILLISECONDS),
            RaftServerConfigKeys.LeaderElection.leaderStepDownWaitTime(properties).toLong(TimeUnit.MILLISECONDS)};
    }

    /** How long a start waits for its Raft port to be released (by a node of this process still stopping). */
    private static final long PORT_WAIT_MILLIS = 10_000;

    /**
     * Waits until the Raft port can be bound, at most {@link #PORT_WAIT_MILLIS}: a member restarted in
     * the same process finds its port held for a moment by its previous server's shutdown, and Ratis
     * ends the whole JVM when its gRPC server cannot bind. A port still taken is a clear error instead.
     */
    private static void awaitPortFree(final InetSocketAddress self) throws IOException
    {
        final long end = System.nanoTime() + PORT_WAIT_MILLIS * 1_000_000L;
        while (true)
        {
            try (java.net.ServerSocket probe = new java.net.ServerSocket())
            {
                probe.setReuseAddress(true);
                probe.bind(new InetSocketAddress(self.getHostString(), self.getPort()));
                return;
            }
            catch (final java.net.BindException taken)
            {
                if (System.nanoTime() - end > 0)
                {
                    throw new IOException("the Raft port " + self.getHostString() + ":" + self.getPort() + " is in use (" +
                        taken.getMessage() + "): stop what holds it, or give this member another port", taken);
                }
                try
                {
                    Thread.sleep(50);
                }
                catch (final InterruptedException e)
                {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while waiting for the Raft port " + self, e);
                }
            }
        }
    }

    /** Opens the storage (recovering every group from it), binds the Raft port and joins the groups. */
    public RaftNode start() throws IOException
    {
        final RaftProperties properties = new RaftProperties();
        RaftServerConfigKeys.setStorageDir(properties, List.of(config.storageDir().toFile()));
        final InetSocketAddress self = config.peers().get(config.nodeId());
        GrpcConfigKeys.Server.setHost(properties, self.getHostString());
        GrpcConfigKeys.Server.setPort(properties, self.getPort());
        RaftServerConfigKeys.Rpc.setTimeoutMin(properties, millis(config.electionTimeoutMin().toMillis()));
        RaftServerConfigKeys.Rpc.setTimeoutMax(properties, millis(config.electionTimeoutMax().toMillis()));
        // A joining member waits (a day) for the leader's first append instead of campaigning.
        final long firstMin = config.joining() ? 86_400_000L : config.electionTimeoutMin().toMillis();
        final long firstMax = config.joining() ? 86_400_001L : config.electionTimeoutMax().toMillis();
        RaftServerConfigKeys.Rpc.setFirstElectionTimeoutMin(properties, millis(firstMin));
        RaftServerConfigKeys.Rpc.setFirstElectionTimeoutMax(properties, millis(firstMax));
        // The leader lease's safety rests on pre-vote (Ratis' default, pinned here): a member does not grant
        // a pre-vote while it still hears from its leader within its own election timeout.
        RaftServerConfigKeys.LeaderElection.setPreVote(properties, true);
        // After a pause (or a lost majority) a member returns to elections in a second, not ten.
        RaftServerConfigKeys.LeaderElection.setLeaderStepDownWaitTime(properties, millis(config.leaderStepDownMillis()));
        RaftServerConfigKeys.Snapshot.setAutoTriggerEnabled(properties, true);
        RaftServerConfigKeys.Snapshot.setAutoTriggerThreshold(properties, config.snapshotEveryEntries());
        RaftServerConfigKeys.Snapshot.setRetentionFileNum(properties, 2);
        RaftServerConfigKeys.Log.setSegmentSizeMax(properties, SizeInBytes.valueOf(config.logSegmentBytes()));
        RaftServerConfigKeys.Log.setPurgeUptoSnapshotIndex(properties, true);
        // Entries carry thousands of decisions (up to ~1 MiB): keep few closed segments on the heap,
        // or they survive young collections and every pause copies them.
        RaftServerConfigKeys.Log.setSegmentCacheNumMax(properties, 2);
        RaftServerConfigKeys.Log.Appender.setSnapshotChunkSizeMax(properties, SizeInBytes.valueOf(config.snapshotChunkBytes()));
        RaftServerConfigKeys.Log.setPurgeGap(properties, 1);
        // No metadata entry (the commit index) after each commit: it doubles the entries Ratis writes
        // and sends, for a faster restart only; a restarted member learns the commit index from the
        // leader's next append instead (docs/cluster.md has what it saves here).
        RaftServerConfigKeys.Log.setLogMetadataEnabled(properties, false);
        // Memory-first: the log worker reports an entry written once it is in the page cache and
        // syncs on its flush thread; the commit index follows the writes, not the syncs.
        RaftServerConfigKeys.Log.setUnsafeFlushEnabled(properties, config.memoryFirst());
        // A follower's next entry goes out as soon as it exists. Ratis' default spaces two appends to
        // a follower at least 1 ms apart; with one STRICT entry in flight at a time the next is due
        // just after the last commit, so nearly every STRICT caller would pay that spacing
        // (docs/cluster.md, "The appender's minimum wait"). Failed appends keep their own backoff.
        RaftServerConfigKeys.Log.Appender.setWaitTimeMin(properties, TimeDuration.ZERO);
        final Parameters parameters = new Parameters();
        GrpcConfigKeys.Server.setServicesCustomizer(parameters, new RaftPortGuard(config));
        if (config.tls())
        {
            // Mutual: the server side (in RaftPortGuard) and the channels this member opens to its peers,
            // which ask the managers on each handshake (a reconnection after the files rotated uses the new ones).
            final GrpcTlsConfig tls = new GrpcTlsConfig(config.tlsKeys(), config.tlsTrust(), true);
            GrpcConfigKeys.Server.setTlsConf(parameters, tls);
            GrpcConfigKeys.Client.setTlsConf(parameters, tls);
            GrpcConfigKeys.Admin.setTlsConf(parameters, tls);
            GrpcConfigKeys.Client.setTlsConf(clientParameters, tls);
            GrpcConfigKeys.Admin.setTlsConf(clientParameters, tls);
        }
        awaitPortFree(self);
        final boolean recover = checkStorage();
        final Map<RaftGroupId, StampedStateMachine> machines = new HashMap<>();
        groups.forEach(member -> machines.put(member.group().getGroupId(), member.stateMachine()));
        final RaftServer built = RaftServer.newBuilder()
            .setServerId(selfId)
            .setGroup(groups.get(0).group())
            .setProperties(properties)
            .setParameters(parameters)
            .setStateMachineRegistry(machines::get)
            .setOption(recover ? RaftStorage.StartupOption.RECOVER : RaftStorage.StartupOption.FORMAT)
            .build();
        built.start();
        server = built;
        if (!recover)
        {
            // Ratis starts with one group; the others are added here, as new, on every member alike.
            final ClientId local = ClientId.randomId();
            for (int g = 1; g < groups.size(); g++)
            {
                final RaftClientReply reply = built.groupManagement(GroupManagementRequest.newAdd(local, selfId, g,
                    groups.get(g).group(), true));
                if (!reply.isSuccess())
                {
                    throw new IOException("could not create Raft group " + g + ": " + reply.getException());
                }
            }
        }
        if (groups.size() > 1)
        {
            rebalancer = Executors.newSingleThreadScheduledExecutor(r ->
            {
                final Thread thread = new Thread(r, config.nodeId() + "-raft-rebalance");
                thread.setDaemon(true);
                return thread;
            });
            rebalancer.scheduleWithFixedDelay(() -> groups.forEach(member -> member.handOverToPreferred(rebalancer)), REBALANCE_MILLIS,
                REBALANCE_MILLIS, TimeUnit.MILLISECONDS);
        }
        return this;
    }

    /**
     * Whether the storage holds this node's groups (recover them) or none (format them). Refuses a
     * directory written with another number of groups: shards would move between logs.
     */
    private boolean checkStorage() throws IOException
    {
        int present = 0;
        for (final RaftGroupMember member : groups)
        {
            if (config.storageDir().resolve(member.group().getGroupId().getUuid().toString()).toFile().isDirectory())
            {
                present++;
            }
        }
        final File[] dirs = config.storageDir().toFile().listFiles(File::isDirectory);
        final int found = dirs == null ? 0 : dirs.length;
        if (present == 0 && found == 0)
        {
            return false;
        }
        if (present != groups.size() || found != groups.size())
        {
            throw new IOException(config.storageDir() + " holds " + found + " Raft group(s) (" + present + " of this node's), " +
                "but this node runs " + groups.size() + "; every member must keep the number of groups its data was written " +
                "with (or start from an empty data directory and catch up)");
        }
        return true;
    }

    private static TimeDuration millis(final long ms)
    {
        return TimeDuration.valueOf(ms, TimeUnit.MILLISECONDS);
    }

    public String nodeId()
    {
        return config.nodeId();
    }

    public RaftNodeConfig config()
    {
        return config;
    }

    /** How many groups this node hosts. */
    public int groupCount()
    {
        return groups.size();
    }

    /** This node's part in group {@code g} (0 to {@link #groupCount()} - 1). */
    public RaftGroupMember group(final int g)
    {
        return groups.get(g);
    }

    /**
     * Before a planned stop: moves the lead of every group this node leads to a caught-up member
     * that answers, each after its application got what it answered into the log
     * ({@link PlannedHandOver}), so the stop neither waits out an election nor drops answered
     * decisions. Waits at most {@code boundMillis}; returns how many groups' leads moved.
     */
    public int handOverLeadsBeforeStop(final long boundMillis)
    {
        if (server == null)
        {
            return 0;
        }
        final ExecutorService steps = Executors.newSingleThreadExecutor(r ->
        {
            final Thread thread = new Thread(r, config.nodeId() + "-raft-stop-hand-over");
            thread.setDaemon(true);
            return thread;
        });
        final List<CompletableFuture<Boolean>> moves = groups.stream()
            .map(member -> member.handOverBeforeStop(steps)).toList();
        try
        {
            CompletableFuture.allOf(moves.toArray(CompletableFuture[]::new)).get(boundMillis, TimeUnit.MILLISECONDS);
        }
        catch (final TimeoutException | ExecutionException e)
        {
            LOG.warn("{}: stopping without every lead handed over ({})", config.nodeId(), e.toString());
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
        finally
        {
            steps.shutdownNow();
        }
        return (int) moves.stream().filter(move -> move.getNow(false)).count();
    }

    @Override
    public void close() throws IOException
    {
        if (rebalancer != null)
        {
            rebalancer.shutdownNow();
        }
        final RaftServer running = server;
        if (running != null)
        {
            running.close(); // each group's state machine waits for a snapshot still being written
            server = null;
        }
        if (ownSnapshotWriter != null)
        {
            ownSnapshotWriter.shutdown();
        }
    }
}
