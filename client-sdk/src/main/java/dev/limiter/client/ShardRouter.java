package dev.limiter.client;

import dev.limiter.protocol.AcquireDecoder;
import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.DescriptorField;
import dev.limiter.protocol.IpAddresses;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.ShardMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntPredicate;

/**
 * Which shard a call's bucket lives on, as the node will place it: the request is matched against
 * the policy set in force (compiled with the node's ordinals from its shard map) and its bucket
 * key is placed by the node's rule: a tenant- or principal-scoped bucket on its tenant's shard, a
 * GLOBAL one and a CLIENT_IP one by the hash of their key, a GLOBAL one split across shards on any
 * shard (a random one per call, among the shards whose group's circuit does not hold calls back).
 * Without a map naming several groups
 * nothing is routed; without the ordinals of the set this client holds (an older node, or a set
 * that changed since the map) tenant-scoped calls are still routed by tenant. Thread-safe: the
 * matcher's scratch ({@link PolicyMatcher}) and the key's are per thread, and nothing is
 * allocated per call.
 */
final class ShardRouter
{
    private static final Logger LOG = LoggerFactory.getLogger(ShardRouter.class);

    /**
     * What the client routes by: the map, the policy set compiled with its ordinals (or null), and
     * a stamp, unique across every router of the process, that changes whenever a descriptor's
     * shard could (a new set or another number of shards; not when only leaders move).
     */
    private record Routing(ShardMap map, PolicySetIndex index, long stamp)
    {
    }

    private static final AtomicLong STAMPS = new AtomicLong();
    /** A descriptor's cached shard ({@link Descriptor#shardUnder}): the stamp above these bits, a code below. */
    private static final int CODE_BITS = 8;
    private static final long CODE_MASK = (1L << CODE_BITS) - 1;
    /** The code of a call any shard's share may decide: a shard is drawn for each call. */
    private static final int ANY_SHARD = 0;
    /** The code of a call whose shard is not known here (-1); a shard's code is the shard + 2. */
    private static final int UNKNOWN = 1;

    static
    {
        if (ShardMap.MAX_SHARDS + 1 > CODE_MASK)
        {
            throw new ExceptionInInitializerError("a shard's code (shard + 2) must fit in " + CODE_BITS + " bits");
        }
    }

    /** A thread's scratch for a bucket key: the prefix and an address's 16 bytes. */
    private static final ThreadLocal<byte[]> KEY = ThreadLocal.withInitial(() -> new byte[ShardMap.KEY_PREFIX_LENGTH + IpAddresses.LENGTH]);

    private final PolicyCache policies;
    /** Whether a call any shard may decide keeps away from a circuit lane ({@link #laneOf}): open, its calls decided locally. */
    private final IntPredicate avoidLane;
    private volatile ShardMap map;
    private volatile Routing routing;

    ShardRouter(final PolicyCache policies, final IntPredicate avoidLane)
    {
        this.policies = policies;
        this.avoidLane = avoidLane;
    }

    /** A node's shard map; routing follows it while it names several groups. */
    void mapReceived(final ShardMap received)
    {
        map = received.groups() > 1 ? received : null;
        rebuild();
    }

    /** The held policy set changed: the matcher follows once a map carries the new set's ordinals. */
    void policiesChanged()
    {
        rebuild();
    }

    private synchronized void rebuild()
    {
        final ShardMap current = map;
        if (current == null)
        {
            routing = null;
            return;
        }
        final Routing previous = routing;
        if (previous != null && previous.index() != null && previous.index().version() == current.policySetVersion() &&
            previous.map().ordinals().equals(current.ordinals()) && previous.map().shards() == current.shards())
        {
            routing = new Routing(current, previous.index(), previous.stamp()); // same set and shards: only leaders moved
            return;
        }
        routing = new Routing(current, compile(current), STAMPS.incrementAndGet());
    }

    /** The held set compiled with the map's ordinals, or null when they are not of the same set. */
    private PolicySetIndex compile(final ShardMap current)
    {
        final PolicyCache.Snapshot held = policies == null ? null : policies.current().orElse(null);
        if (held == null || held.version() != current.policySetVersion() || current.ordinals().isEmpty())
        {
            return null;
        }
        try
        {
            return PolicySetIndex.compile(PolicySetIndex.enforcedOnly(held.policies()).setVersion(held.version()).build(), p ->
            {
                final Integer ordinal = current.ordinals().get(p.getId());
                if (ordinal == null)
                {
                    throw new IllegalArgumentException("no ordinal for policy '" + p.getId() + "' in the shard map");
                }
                return ordinal;
            });
        }
        catch (final IllegalArgumentException e) // PolicyValidationException included
        {
            LOG.debug("routing by tenant only: the policy set (version {}) does not compile with the map's ordinals: {}",
                held.version(), e.getMessage());
            return null;
        }
    }

    /** Whether calls are routed by shard now. */
    boolean routes()
    {
        return routing != null;
    }

    /** The leader ({@code host:port}) of the shard {@code descriptor}'s bucket lives on; "" when unknown or not routed. */
    String leaderFor(final Descriptor descriptor)
    {
        return leaderOfShard(shardFor(descriptor));
    }

    /** The shard {@code descriptor}'s bucket lives on, or -1 when calls are not routed or it is not known here. */
    int shardFor(final Descriptor descriptor)
    {
        final Routing current = routing;
        return current == null ? -1 : shardOf(current, descriptor);
    }

    /** The leader ({@code host:port}) of {@code shard} (from {@link #shardFor}); "" when unknown or not routed. */
    String leaderOfShard(final int shard)
    {
        final Routing current = routing;
        return current == null || shard < 0 || shard >= current.map().shards() ? "" : current.map().leaderOf(shard);
    }

    /**
     * The circuit lane of {@code shard} (from {@link #shardFor}): 1 + its Raft group, so that one
     * group's failover opens only its own calls' circuit; 0 for a call that is not routed.
     */
    int laneOf(final int shard)
    {
        final Routing current = routing;
        return current == null || shard < 0 || shard >= current.map().shards() ? 0 : lane(current.map(), shard);
    }

    /** The circuit lane of {@code shard} of {@code map}: 1 + its group (lane 0 is for calls not routed). */
    private static int lane(final ShardMap map, final int shard)
    {
        return 1 + map.groupOf(shard);
    }

    /**
     * A random shard for a call any shard's share may decide, among those whose group's circuit does
     * not keep calls from the cluster (closed, or half-open with its probe free, so such a call may
     * be the probe that closes it): while one group's leader is gone, its calls of this kind go to
     * the other groups' shares (decided by a node, against a share of the budget) rather than to
     * local decisions. Any shard when every circuit is open.
     */
    private int anyShard(final ShardMap map, final int shards)
    {
        final ThreadLocalRandom random = ThreadLocalRandom.current();
        final int first = random.nextInt(shards);
        if (!avoidLane.test(lane(map, first)))
        {
            return first; // nearly always: no circuit open
        }
        int closed = 0;
        for (int shard = 0; shard < shards; shard++)
        {
            closed += avoidLane.test(lane(map, shard)) ? 0 : 1;
        }
        if (closed == 0)
        {
            return first;
        }
        int pick = random.nextInt(closed);
        for (int shard = 0; shard < shards; shard++)
        {
            if (!avoidLane.test(lane(map, shard)) && pick-- == 0)
            {
                return shard;
            }
        }
        return first;
    }

    private int shardOf(final Routing current, final Descriptor descriptor)
    {
        final int shards = current.map().shards();
        final long tenantHash = descriptor.tenantHash();
        if (current.index() == null)
        {
            return tenantHash == 0 ? -1 : ShardMap.shardOf(tenantHash, shards);
        }
        // The match is most of a call's routing: a descriptor used again keeps its answer under this stamp.
        final long cached = descriptor.shardUnder;
        final int code;
        if (cached >>> CODE_BITS == current.stamp())
        {
            code = (int)(cached & CODE_MASK);
        }
        else
        {
            code = codeOf(current.index(), descriptor, shards);
            descriptor.shardUnder = current.stamp() << CODE_BITS | code;
        }
        // Held as a share on every shard: any leader decides it; spread evenly, each node's share of
        // the calls is the share of the shards it leads.
        return code == ANY_SHARD ? anyShard(current.map(), shards) : code - 2;
    }

    /** Where {@code descriptor}'s bucket lives under {@code index} with {@code shards} shards, as a code (above). */
    private static int codeOf(final PolicySetIndex index, final Descriptor descriptor, final int shards)
    {
        final long tenantHash = descriptor.tenantHash();
        final AcquireDecoder decoder = PolicyMatcher.decode(descriptor);
        if (decoder == null)
        {
            return UNKNOWN;
        }
        final CompiledPolicy policy = index.match(decoder).forRequest(decoder);
        final byte[] key = KEY.get();
        switch (policy.scope())
        {
            case GLOBAL:
                if (policy.routedToAnyShare(shards))
                {
                    return ANY_SHARD;
                }
                return 2 + ShardMap.keyShard(key, ShardMap.KEY_PREFIX_LENGTH, policy.ordinal(), policy.version(), shards);
            case CLIENT_IP:
                if (!IpAddresses.parse(decoder.buffer(), decoder.offset(DescriptorField.CLIENT_IP), decoder.length(DescriptorField.CLIENT_IP),
                    key, ShardMap.KEY_PREFIX_LENGTH))
                {
                    return UNKNOWN;
                }
                return 2 + ShardMap.keyShard(key, ShardMap.KEY_PREFIX_LENGTH + IpAddresses.LENGTH, policy.ordinal(), policy.version(),
                    shards);
            default: // TENANT, PRINCIPAL: the tenant's shard
                return tenantHash == 0 ? UNKNOWN : 2 + ShardMap.shardOf(tenantHash, shards);
        }
    }
}
