package dev.limiter.server.engine;

import dev.limiter.protocol.AcquireDecoder;
import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.DescriptorField;
import dev.limiter.protocol.IpAddresses;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.ResultCodec;
import dev.limiter.protocol.RouteTemplate;
import dev.limiter.protocol.ShardMap;
import dev.limiter.server.control.ActiveExemptions;
import dev.limiter.server.control.PolicyControl;
import dev.limiter.server.metrics.ServerMetrics;
import dev.limiter.server.table.BucketKeys;
import dev.limiter.server.table.BucketTable;
import dev.limiter.server.table.KeyHash;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import org.agrona.DirectBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Arrays;
import java.util.List;

/**
 * Routes a decoded decision frame to the shards that own its keys: resolves every entry's policy
 * (and the rollout, exemption, stacked and shadow policies that apply), builds its bucket key,
 * picks its shard, prepares the answer and hands the frame to each shard concerned. One per event
 * loop (it holds that loop's decoder and pool of frame work), used only on that loop, allocating
 * nothing per decision. This class alone writes bucket keys.
 */
public final class FrameRouter
{
    private static final Logger LOG = LoggerFactory.getLogger(FrameRouter.class);

    private final AcquireDecoder decoder = new AcquireDecoder();
    private final FramePool pool;
    private final CompiledPolicy[] stacked = new CompiledPolicy[PolicySetIndex.MAX_STACKED_PER_REQUEST];
    /** Picks the share of a policy split across shards that decides each of its requests. */
    private final SharePicker shares = new SharePicker();
    private final LeaseIds leaseIds = new LeaseIds();

    /** A router whose frames sample their rejections into a log of their own (tests that do not read it). */
    public FrameRouter(final ServerMetrics metrics)
    {
        this(metrics, new RejectedDecisions());
    }

    /** @param rejections the node's sampled log of rejected decisions, shared by every event loop's router */
    public FrameRouter(final ServerMetrics metrics, final RejectedDecisions rejections)
    {
        pool = new FramePool(metrics, rejections);
    }

    /** This event loop's decoder: the caller wraps a frame in it before {@link #route}. */
    public AcquireDecoder decoder()
    {
        return decoder;
    }

    /**
     * Routes the frame the decoder holds. Bad entries are answered through the responder with an
     * ERROR; otherwise the responder hears {@link FrameResponder#frameAccepted} before any shard
     * gets the frame, and {@link FrameResponder#frameCompleted} once its answer is written.
     *
     * @param startNanos when the frame was taken up ({@link System#nanoTime()}), for the latency metric
     * @param single     ACQUIRE or RELEASE (answered with RESULT) rather than BATCH_ACQUIRE
     * @param release    a RELEASE: the entry gives back the lease {@code leaseId} wherever its acquire took one,
     *                   if {@code leaseCheck} still names the limits that lease
     */
    public void route(final ChannelHandlerContext ctx, final FrameResponder responder, final PolicySetIndex index,
        final ActiveExemptions exempt, final List<Shard> shards, final long correlationId, final long startNanos, final boolean single,
        final boolean release, final long leaseId, final int leaseCheck)
    {
        long nowMillis = 0;
        boolean answeredHere = false;
        shares.newFrame();
        final FrameWork work = pool.acquire();
        work.reset(ctx, responder, index, decoder.count(), correlationId, startNanos);
        work.release = release;
        work.releasedLease = leaseId;
        work.releasedCheck = leaseCheck;
        work.request = decoder.buffer().retain(); // a sampled rejection reads its tenant and path from it
        final int shardCount = shards.size();
        long shardMask = 0;
        while (decoder.next())
        {
            final int i = work.count;
            work.tenantAt[i] = decoder.offset(DescriptorField.TENANT);
            work.tenantLength[i] = decoder.length(DescriptorField.TENANT);
            work.pathAt[i] = decoder.offset(DescriptorField.ROUTE);
            work.pathLength[i] = decoder.length(DescriptorField.ROUTE);
            final CompiledPolicy matched = index.match(decoder);
            // A version being rolled out decides for its tenants; the others stay on the previous one.
            final CompiledPolicy policy = matched.forRequest(decoder);
            if (index.noLimit(matched, policy, decoder))
            {
                // An Envoy descriptor no policy selects, or an unlimited one, has no limit (as in envoyproxy/ratelimit).
                answerOnTheLoop(work, i, policy, decoder.cost(), FrameWork.NO_LIMIT);
                answeredHere = true;
                if (index.hasShadow())
                {
                    shardMask |= addShadow(work, decoder, index.matchShadow(decoder), policy, shards, i);
                }
                continue;
            }
            final String missing = missingScopeField(policy, decoder);
            if (missing != null)
            {
                // This entry alone is refused: the frame's other entries (other callers' requests, batched
                // with it by their SDK) are decided as usual.
                answerOnTheLoop(work, i, policy, decoder.cost(), FrameWork.REFUSED);
                work.refuse(i, policy, missing);
                answeredHere = true;
                continue;
            }
            if (!exempt.isEmpty() && !release) // a release is never exempt: a lease taken before an exemption goes back
            {
                nowMillis = nowMillis == 0 ? System.currentTimeMillis() : nowMillis;
                if (exempt.bypass(decoder, nowMillis))
                {
                    // Answered here, without a bucket: no shard sees it, nothing is logged.
                    answerOnTheLoop(work, i, policy, decoder.cost(), FrameWork.EXEMPT);
                    answeredHere = true;
                    continue;
                }
            }
            final int keyStart = work.keyCursor;
            final long tenantHash = buildKey(work, decoder, policy);
            final int keyLength = work.keyCursor - keyStart;
            final long keyHash = KeyHash.hash(work.keys, keyStart, keyLength);
            work.entries.keyOffset[i] = keyStart;
            work.entries.keyLength[i] = keyLength;
            work.entries.keyHash[i] = keyHash;
            work.entries.cost[i] = decoder.cost();
            work.entries.policy[i] = policy;
            final int shard = policy.routedToAnyShare(shardCount) ? shares.pick(shards, policy.ordinal(), keyHash, decoder.cost()) :
                shardOf(tenantHash, keyHash, shardCount);
            work.entries.shard[i] = shard;
            shardMask |= 1L << shard;
            work.count++;
            if (work.stacked)
            {
                final String problem = addStacked(work, decoder, stacked, index, i, policy, shardCount);
                if (problem != null)
                {
                    work.refuse(i, policy, problem); // its shard skips it; the other entries are decided
                    answeredHere = true;
                    continue;
                }
            }
            if (index.hasShadow())
            {
                final CompiledPolicy shadow = policy != matched && matched.rolloutShadowsOthers() ? matched : index.matchShadow(decoder);
                shardMask |= addShadow(work, decoder, shadow, policy, shards, i);
            }
            // A grant of a concurrency limit takes a lease: one random id for every limit the entry may take it on.
            work.leaseId[i] = !release && index.hasLeases() && LeaseChecks.mayLease(work, i) ? leaseIds.next() : 0;
        }
        if (decoder.failed())
        {
            work.recycle();
            responder.error(ctx, correlationId, decoder.errorCode(), decoder.errorMessage());
            return;
        }
        for (int i = 0; release && i < work.count; i++)
        {
            work.leaseMatches[i] = work.entries.shard[i] >= 0 && LeaseChecks.current(work, i) == leaseCheck;
        }
        final int count = work.count;
        final ByteBuf response = ctx.alloc().directBuffer(ResultCodec.recordsEnd(count) + 2 + 64);
        work.response = response;
        work.frameStart = ResultCodec.beginBatch(response,
            single ? MessageType.RESULT : MessageType.BATCH_RESULT, correlationId, count);
        if (answeredHere)
        {
            for (int i = 0; i < count; i++)
            {
                if (work.entries.shard[i] == FrameWork.EXEMPT)
                {
                    final CompiledPolicy policy = work.entries.policy[i];
                    final long burst = policy.limit().burstTokens();
                    ResultCodec.putRecord(response, ResultCodec.recordOffset(work.frameStart, i), true, ReasonCode.EXEMPT,
                        policy.ordinal(), burst, burst, 0, 0, policy.version(), policy.windowSeconds());
                }
                else if (work.entries.shard[i] == FrameWork.NO_LIMIT)
                {
                    final CompiledPolicy policy = work.entries.policy[i];
                    ResultCodec.putRecord(response, ResultCodec.recordOffset(work.frameStart, i), true, ReasonCode.NO_LIMIT,
                        policy.ordinal(), 0, 0, 0, 0, policy.version(), 0);
                }
                else if (work.entries.shard[i] == FrameWork.REFUSED)
                {
                    final CompiledPolicy policy = work.entries.policy[i];
                    ResultCodec.putRecord(response, ResultCodec.recordOffset(work.frameStart, i), false, ReasonCode.INVALID_REQUEST,
                        policy.ordinal(), 0, 0, ResultCodec.NEVER, 0, policy.version(), policy.windowSeconds());
                }
            }
        }
        final int shardsInFrame = Long.bitCount(shardMask);
        work.shardsInFrame = shardsInFrame;
        work.pendingShards.set(shardsInFrame);
        if (work.crossShardShadows)
        {
            work.comparesPending.set(shardsInFrame);
        }
        responder.frameAccepted(ctx);
        if (shardMask == 0)
        {
            work.shardsDone(0); // every entry was exempt or had no limit: complete now
            return;
        }
        if (shardsInFrame > 1 && anyLogBehind(shards, shardMask))
        {
            // Refused whole before any shard decides: the caller may send it again as it is.
            work.overloaded = true;
            work.shardsDone(shardsInFrame);
            return;
        }
        // Do not touch the work after the last submit: an inline shard may complete and recycle it.
        long remaining = shardMask;
        while (remaining != 0)
        {
            final int s = Long.numberOfTrailingZeros(remaining);
            remaining &= remaining - 1;
            try
            {
                shards.get(s).submit(work);
            }
            catch (final RuntimeException e)
            {
                // Stopping: this shard and those not yet handed the frame will never report back.
                LOG.warn("could not hand a frame to shard {}: {}", s, e.toString());
                work.failed = true;
                work.shardsDone(1 + Long.bitCount(remaining));
                return;
            }
        }
    }

    /** Whether the replication log of any shard in {@code shardMask} is too far behind to take decisions. */
    private static boolean anyLogBehind(final List<Shard> shards, final long shardMask)
    {
        for (long remaining = shardMask; remaining != 0; remaining &= remaining - 1)
        {
            if (shards.get(Long.numberOfTrailingZeros(remaining)).logBehind())
            {
                return true;
            }
        }
        return false;
    }

    /** Entry {@code i} is answered by this loop without a bucket ({@link FrameWork#EXEMPT} or {@link FrameWork#NO_LIMIT}). */
    private static void answerOnTheLoop(final FrameWork work, final int i, final CompiledPolicy policy, final int cost, final int how)
    {
        work.entries.keyOffset[i] = 0;
        work.entries.keyLength[i] = 0;
        work.entries.cost[i] = cost;
        work.entries.policy[i] = policy;
        work.entries.shard[i] = how;
        work.count++;
    }

    /** Why a scope-keyed policy cannot key this entry (its scope's field is empty), or null. */
    private static String missingScopeField(final CompiledPolicy policy, final AcquireDecoder d)
    {
        switch (policy.scope())
        {
            case PRINCIPAL:
                return d.length(DescriptorField.PRINCIPAL) == 0 ?
                    "principal is required by policy '" + policy.id() + "', which limits each principal within a tenant" : null;
            case CLIENT_IP:
                return d.length(DescriptorField.CLIENT_IP) == 0 ?
                    "clientIp is required by policy '" + policy.id() + "', which limits each client IP" : null;
            default:
                return null;
        }
    }

    /**
     * Adds the parts the current entry is charged against too (on the entry's shard: the shard
     * checks every part, then charges all of them or none): its policy's extra limits (buckets of the
     * same key under each limit), then the stacked policies matching it, each with its own extra
     * limits. With several shards a TENANT or PRINCIPAL part lives on the tenant's shard, so the
     * entry's own policy must be tenant- or principal-scoped too; a GLOBAL or CLIENT_IP part is
     * charged against the entry shard's share of it ({@link CompiledPolicy#limitOnShard}).
     *
     * @return why the entry cannot be decided, or null
     */
    private static String addStacked(final FrameWork work, final AcquireDecoder decoder, final CompiledPolicy[] scratch,
        final PolicySetIndex index, final int entry, final CompiledPolicy own, final int shardCount)
    {
        work.stackFrom[entry] = work.partCount;
        work.stackCount[entry] = 0;
        addCompanions(work, decoder, entry, own);
        if (!index.hasStacked() || own.regional())
        {
            // A regional policy's request is decided against its region's share alone: not charged to stacked budgets.
            return null;
        }
        final int matched = index.matchStacked(decoder, scratch);
        for (int k = 0; k < matched; k++)
        {
            final CompiledPolicy part = scratch[k].forRequest(decoder);
            scratch[k] = null;
            final String ownProblem = PolicyControl.stackedOwnScopeProblem(own.id(), own.scope(), part.id(), part.scope(), shardCount);
            if (ownProblem != null)
            {
                Arrays.fill(scratch, k + 1, matched, null);
                return ownProblem;
            }
            final String missing = missingScopeField(part, decoder);
            if (missing != null)
            {
                Arrays.fill(scratch, k + 1, matched, null);
                return missing;
            }
            if (own.routedToAnyShare(shardCount) && part.limit().leases())
            {
                // A release goes to whichever share its router picks, not the one that granted the lease.
                Arrays.fill(scratch, k + 1, matched, null);
                return "policy '" + own.id() + "' is split across shards and stacked policy '" + part.id() + "' holds leases " +
                    "(maxConcurrent): a release could not find the share that granted its lease; give such requests a " +
                    "policy without splitAcrossShards";
            }
            final int p = work.partCount;
            final int keyStart = work.keyCursor;
            buildKey(work, decoder, part);
            work.parts.keyOffset[p] = keyStart;
            work.parts.keyLength[p] = work.keyCursor - keyStart;
            work.parts.keyHash[p] = KeyHash.hash(work.keys, keyStart, work.keyCursor - keyStart);
            work.parts.policy[p] = part;
            work.partCount++;
            work.stackCount[entry]++;
            addCompanions(work, decoder, entry, part);
        }
        return null;
    }

    /** Adds a part for each extra limit of {@code policy}: the same key under that limit's index. */
    private static void addCompanions(final FrameWork work, final AcquireDecoder decoder, final int entry, final CompiledPolicy policy)
    {
        final CompiledPolicy[] companions = policy.companions();
        for (int c = 0; c < companions.length; c++)
        {
            final int p = work.partCount;
            final int keyStart = work.keyCursor;
            buildKey(work, decoder, companions[c]);
            work.parts.keyOffset[p] = keyStart;
            work.parts.keyLength[p] = work.keyCursor - keyStart;
            work.parts.keyHash[p] = KeyHash.hash(work.keys, keyStart, work.keyCursor - keyStart);
            work.parts.policy[p] = companions[c];
            work.partCount++;
            work.stackCount[entry]++;
        }
    }

    /**
     * The shard that holds a tenant's tenant- and principal-scoped buckets, among {@code shardCount}
     * (the same rule {@link #route} applies to every entry).
     */
    public static int tenantShard(final DirectBuffer tenant, final int offset, final int length, final int shardCount)
    {
        final long hash = KeyHash.hash(tenant, offset, length);
        return shardOf(hash == 0 ? 1 : hash, 0, shardCount);
    }

    /**
     * Tenant-scoped buckets live on the tenant's shard; global and per-IP ones on their key's
     * (the rule clients route by: {@link ShardMap#shardOf}).
     */
    private static int shardOf(final long tenantHash, final long keyHash, final int shardCount)
    {
        return ShardMap.shardOf(tenantHash != 0 ? tenantHash : keyHash, shardCount);
    }

    /**
     * Queues the SHADOW policy's evaluation of the current entry, if one matches and the entry has
     * what its scope needs (else it is skipped: a shadow never refuses a request).
     *
     * @return the bit of the shard that will evaluate it, or 0
     */
    private long addShadow(final FrameWork work, final AcquireDecoder decoder, final CompiledPolicy shadow,
        final CompiledPolicy enforced, final List<Shard> shards, final int entry)
    {
        final int shardCount = shards.size();
        if (shadow == null || missingScopeField(shadow, decoder) != null)
        {
            return 0;
        }
        final int j = work.shadowCount;
        final int keyStart = work.keyCursor;
        final long tenantHash = buildKey(work, decoder, shadow);
        final int keyLength = work.keyCursor - keyStart;
        final long keyHash = KeyHash.hash(work.keys, keyStart, keyLength);
        work.shadows.keyOffset[j] = keyStart;
        work.shadows.keyLength[j] = keyLength;
        work.shadows.keyHash[j] = keyHash;
        work.shadows.cost[j] = decoder.cost();
        work.shadows.policy[j] = shadow;
        work.shadows.entry[j] = entry;
        final int shard = shadow.routedToAnyShare(shardCount) ? shares.pick(shards, shadow.ordinal(), keyHash, decoder.cost()) :
            shardOf(tenantHash, keyHash, shardCount);
        work.shadows.shard[j] = shard;
        work.shadows.evaluated[j] = false;
        compareKey(work, decoder, j, shadow, enforced);
        final int entryShard = work.entries.shard[entry];
        work.crossShardShadows |= entryShard >= 0 && entryShard != shard;
        work.shadowCount++;
        return 1L << shard;
    }

    /**
     * Writes shadow {@code j}'s key in the comparison with what was enforced ({@link ShadowCompareTable}) at
     * the work's key cursor: {@code u8 tenant length | tenant | route}, the route being the shadow's route
     * template, else the enforced policy's, else the request's path.
     */
    private static void compareKey(final FrameWork work, final AcquireDecoder d, final int j, final CompiledPolicy shadow,
        final CompiledPolicy enforced)
    {
        final ByteBuf buf = d.buffer();
        final int tenantLength = Math.min(d.length(DescriptorField.TENANT), 255);
        final RouteTemplate template = shadow.route() != null ? shadow.route() : enforced.route();
        final int routeLength = template != null ? template.canonicalUtf8().length :
            Math.min(d.length(DescriptorField.ROUTE), DescriptorField.ROUTE.maxBytes());
        work.ensureKeyRoom(1 + tenantLength + routeLength);
        final int start = work.keyCursor;
        work.keys.putByte(start, (byte)tenantLength);
        buf.getBytes(d.offset(DescriptorField.TENANT), work.keys.byteArray(), start + 1, tenantLength);
        if (template != null)
        {
            work.keys.putBytes(start + 1 + tenantLength, template.canonicalUtf8());
        }
        else
        {
            buf.getBytes(d.offset(DescriptorField.ROUTE), work.keys.byteArray(), start + 1 + tenantLength, routeLength);
        }
        final int length = 1 + tenantLength + routeLength;
        work.shadows.compareOffset[j] = start;
        work.shadows.compareLength[j] = length;
        work.shadows.compareHash[j] = KeyHash.hash(work.keys, start, length);
        work.keyCursor = start + length;
    }

    /**
     * Writes the bucket key for the current entry at the work's key cursor: the {@link BucketKeys}
     * prefix (policy ordinal and version), then the scope part, which is
     * nothing (GLOBAL), the tenant (TENANT), {@code u8 tenant length | tenant | principal}
     * (PRINCIPAL) or the client IP's 16-byte value (CLIENT_IP).
     *
     * @return the tenant's hash for tenant-scoped keys (never 0), else 0
     */
    private static long buildKey(final FrameWork work, final AcquireDecoder d, final CompiledPolicy policy)
    {
        work.ensureKeyRoom(BucketTable.MAX_KEY_LENGTH);
        int at = work.keyCursor;
        BucketKeys.putPrefix(work.keys, at, policy.ordinal(), policy.version(), policy.limitIndex());
        at += BucketKeys.PREFIX_LENGTH;
        final ByteBuf buf = d.buffer();
        long tenantHash = 0;
        switch (policy.scope())
        {
            case GLOBAL:
                break;
            case CLIENT_IP:
            {
                // The address's 16-byte value, so every spelling of one address is one bucket.
                IpAddresses.parse(buf, d.offset(DescriptorField.CLIENT_IP), d.length(DescriptorField.CLIENT_IP),
                    work.keys.byteArray(), at);
                at += IpAddresses.LENGTH;
                break;
            }
            case PRINCIPAL:
            {
                final int tenantLength = d.length(DescriptorField.TENANT);
                work.keys.putByte(at++, (byte)tenantLength);
                tenantHash = copy(work, at, buf, d.offset(DescriptorField.TENANT), tenantLength);
                at += tenantLength;
                final int principalLength = d.length(DescriptorField.PRINCIPAL);
                copy(work, at, buf, d.offset(DescriptorField.PRINCIPAL), principalLength);
                at += principalLength;
                break;
            }
            default: // TENANT
            {
                final int tenantLength = d.length(DescriptorField.TENANT);
                tenantHash = copy(work, at, buf, d.offset(DescriptorField.TENANT), tenantLength);
                at += tenantLength;
                break;
            }
        }
        work.keyCursor = at;
        return tenantHash;
    }

    /** Copies bytes into the key buffer; returns their hash (never 0). */
    private static long copy(final FrameWork work, final int at, final ByteBuf from, final int offset, final int length)
    {
        from.getBytes(offset, work.keys.byteArray(), at, length);
        final long hash = KeyHash.hash(work.keys, at, length);
        return hash == 0 ? 1 : hash;
    }
}
