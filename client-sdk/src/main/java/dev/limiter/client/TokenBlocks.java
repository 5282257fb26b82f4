package dev.limiter.client;

import dev.limiter.protocol.AcquireDecoder;
import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.TokenLease;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BiFunction;
import java.util.function.LongSupplier;

/**
 * SDK token leases: for a policy with {@code tokenLease}, this SDK takes blocks of a key's tokens
 * from the cluster (an acquire of the block's size, charged to the bucket when granted) and
 * decides later calls from the block on the caller's thread, without a round trip.
 *
 * <p>A block is the SDK's own recent demand for the key over the policy's demand window, at most
 * its share of the burst; a key is leased only once that demand has been seen for a window. When a
 * block runs low (a fifth left) one caller asks for the next in the background; when it lands, what
 * was left of the old one lapses. Tokens not used within the block's {@code maxAge} lapse too: they
 * are never given back (a give-back would need a write of its own to the log, for tokens worth a
 * few milliseconds of demand). So every token is used within {@code maxAge} of being charged, and
 * over any interval T all SDKs together are granted at most {@code burst + rate x (T + maxAge)}
 * (TokenBlocksTest); what a lease costs is under-admission of at most the lapsed tokens, counted
 * ({@link #lapsed()}).
 *
 * <p>Only where a local decision is what the node would decide: the request's policy is the
 * leased one, and no stacked or shadow policy matches it (those need the node to see it). With
 * {@code tokenLease.hotRate}, only keys the nodes flag as hot (decided at that many tokens a second
 * or more; the flag rides on their answers) are leased, for {@link #HOT_HOLD_NANOS} after the last
 * flag: every other key is decided by the node, call by call. At most {@link #MAX_KEYS} keys are
 * held, with bounded work per new key however callers churn them. Thread-safe.
 */
final class TokenBlocks
{
    /**
     * How long a key stays leased after a node last flagged it hot (nodes report once a second; a
     * key whose blocks carry its demand still weighs its whole rate there, so the flag keeps coming
     * while it stays hot).
     */
    static final long HOT_HOLD_NANOS = 3_000_000_000L;
    /** A block is asked for when this share of the last one is left (1/5). */
    private static final int RENEW_AT_DIVISOR = 5;
    /** What a descriptor caches: the key lease it decides from under a policy set version, for one client. */
    private record Resolved(TokenBlocks owner, long version, KeyBlock lease)
    {
    }

    /**
     * Keys held at most (a PRINCIPAL-scoped policy can name millions, and callers may choose them).
     * Past that, a new key takes the place of one without a block in date that no call looked up
     * lately, or, while every key looked at has one, is decided by the node call by call
     * ({@link BoundedKeyTable}: at most {@value BoundedKeyTable#SCAN} keys looked at per new key). A
     * descriptor that holds a dropped key's lease goes on deciding from it.
     */
    static final int MAX_KEYS = 10_000;

    /** The leased tokens of one key at this SDK. */
    static final class KeyBlock
    {
        final TokenBlocks owner;
        final long windowNanos;
        final long maxAgeNanos;
        final long capTokens;
        /** 0: lease whenever demand calls for it; else only while a node flagged the key hot. */
        final long hotRate;
        volatile long hotUntilNanos;
        final AtomicLong tokens = new AtomicLong();
        final AtomicBoolean asking = new AtomicBoolean();
        final LongAdder calls = new LongAdder();
        volatile long expiresAtNanos;
        volatile long demandSinceNanos;
        volatile long lastBlock;
        volatile Decision answer;

        KeyBlock(final TokenBlocks owner, final long windowNanos, final long maxAgeNanos, final long capTokens, final long hotRate,
            final long now)
        {
            this.owner = owner;
            this.hotRate = hotRate;
            this.windowNanos = windowNanos;
            this.maxAgeNanos = maxAgeNanos;
            this.capTokens = capTokens;
            this.demandSinceNanos = now;
        }
    }

    /**
     * A policy set as this client compiled it; {@code stamp} is unique across every client of the
     * process and every set, so a descriptor can remember "no lease here" in one long.
     */
    private record Compiled(long version, PolicySetIndex index, long stamp)
    {
    }

    private static final AtomicLong STAMPS = new AtomicLong();

    private final LongSupplier clock;
    /** Asks the cluster for a block in the background: (descriptor, tokens) to the node's decision. */
    private final BiFunction<Descriptor, Integer, CompletableFuture<Decision>> renewer;
    private final BoundedKeyTable<String, KeyBlock> byKey = new BoundedKeyTable<>(MAX_KEYS, BoundedKeyTable.WhenFull.REFUSE, TokenBlocks::retention);
    private final LongAdder leased = new LongAdder();
    private final LongAdder used = new LongAdder();
    private final LongAdder lapsed = new LongAdder();
    /** Policy sets compiled (once each, unless a call races a set's preparation). */
    private final LongAdder compiles = new LongAdder();
    private volatile Compiled compiled;
    private volatile PolicyCache.Snapshot pending;

    TokenBlocks(final PolicyCache policies, final LongSupplier clock, final BiFunction<Descriptor, Integer, CompletableFuture<Decision>> renewer)
    {
        policies.current().ifPresent(this::policiesChanged);
        policies.onChange(this::policiesChanged);
        this.clock = clock;
        this.renewer = renewer;
    }

    /**
     * The answer from this SDK's block of {@code descriptor}'s key when it holds {@code cost}
     * tokens still in date; null otherwise (the call goes to the cluster). Allocates nothing once
     * the descriptor has been seen.
     */
    Decision tryLocal(final Descriptor descriptor, final int cost)
    {
        final KeyBlock lease = leaseOf(descriptor);
        if (lease == null)
        {
            return null;
        }
        lease.calls.increment();
        final long now = clock.getAsLong();
        final long expiresAt = lease.expiresAtNanos;
        if (now - expiresAt >= 0)
        {
            lapseIfStill(lease, expiresAt);
            return null;
        }
        while (true)
        {
            final long left = lease.tokens.get();
            if (left < cost)
            {
                return null;
            }
            if (lease.tokens.compareAndSet(left, left - cost))
            {
                used.add(cost);
                if ((left - cost) * RENEW_AT_DIVISOR < lease.lastBlock)
                {
                    renewSoon(descriptor, lease, now);
                }
                return lease.answer;
            }
        }
    }

    /**
     * How many tokens a call of {@code cost} that found no usable block should ask the cluster for:
     * a block (then pass the answer to {@link #granted}), or just its cost.
     */
    int toAsk(final Descriptor descriptor, final int cost)
    {
        final KeyBlock lease = leaseOf(descriptor);
        if (lease == null)
        {
            return cost;
        }
        final long block = blockFor(lease, cost, clock.getAsLong());
        return block > cost && lease.asking.compareAndSet(false, true) ? (int)block : cost;
    }

    /**
     * The cluster answered a call that asked for {@code asked} tokens for a caller who needs
     * {@code cost}: when a block was granted, the rest of it is this SDK's to decide from.
     *
     * @param askedAtNanos when the block was asked for (its tokens count from then: the bucket may
     *                     have charged them any time after)
     * @param answer null when the call failed
     * @return whether the answer serves the caller (false: a block was refused; ask for the cost alone)
     */
    boolean granted(final Descriptor descriptor, final int cost, final int asked, final long askedAtNanos, final Decision answer)
    {
        if (asked <= cost)
        {
            return true;
        }
        final KeyBlock lease = leaseOf(descriptor);
        if (lease != null)
        {
            if (answer != null)
            {
                install(lease, asked, cost, askedAtNanos, answer);
            }
            lease.asking.set(false);
        }
        return answer != null && (answer.allowed() || answer.degraded());
    }

    private void install(final KeyBlock lease, final long block, final long cost, final long askedAtNanos, final Decision answer)
    {
        if (!answer.allowed() || answer.degraded() || answer.reason() != ReasonCode.ALLOWED)
        {
            return; // refused, decided locally or exempt: nothing was charged as a block
        }
        final long now = clock.getAsLong();
        synchronized (lease)
        {
            lapse(lease); // what was left of the last block: its tokens are older than this one's
            lease.answer = answer.asTokenLeaseAnswer();
            lease.lastBlock = block;
            // From the ask, not the answer: every token is used within maxAge of its charge.
            lease.expiresAtNanos = askedAtNanos + lease.maxAgeNanos;
            lease.tokens.set(block - cost);
        }
        leased.add(block);
        used.add(cost);
        // Demand is watched continuously; past four windows it is scaled down to the last one, so
        // that it follows changes (counts racing with this are off by a few calls, no more).
        final long seen = now - lease.demandSinceNanos;
        if (seen > 4 * lease.windowNanos)
        {
            final long recent = (long)Math.ceil((double)lease.calls.sum() * lease.windowNanos / seen);
            lease.calls.reset();
            lease.calls.add(recent);
            lease.demandSinceNanos = now - lease.windowNanos;
        }
    }

    private void renewSoon(final Descriptor descriptor, final KeyBlock lease, final long now)
    {
        final long block = blockFor(lease, 0, now);
        if (block <= 0 || !lease.asking.compareAndSet(false, true))
        {
            return;
        }
        try
        {
            renewer.apply(descriptor, (int)block).whenComplete((answer, failure) ->
            {
                if (answer != null)
                {
                    install(lease, block, 0, now, answer);
                }
                lease.asking.set(false);
            });
        }
        catch (final RuntimeException e)
        {
            lease.asking.set(false); // closing: the next call goes to the cluster
        }
    }

    /**
     * A node said {@code descriptor}'s key is hot: with a {@code hotRate}, its calls may take blocks
     * for {@link #HOT_HOLD_NANOS} from now.
     */
    void hot(final Descriptor descriptor)
    {
        if (compiled == null)
        {
            return; // a new set not compiled yet: never compiled here, on an I/O thread (the next flag counts)
        }
        final KeyBlock lease = leaseOf(descriptor);
        if (lease != null && lease.hotRate != 0)
        {
            lease.hotUntilNanos = clock.getAsLong() + HOT_HOLD_NANOS;
        }
    }

    /**
     * The block to ask for: recent demand over the window, at most the share of the burst; 0 while
     * demand is unknown, or while a key leased only when hot is not.
     */
    private static long blockFor(final KeyBlock lease, final int cost, final long now)
    {
        if (lease.hotRate != 0 && (lease.hotUntilNanos == 0 || now - lease.hotUntilNanos >= 0))
        {
            return 0;
        }
        final long seen = now - lease.demandSinceNanos;
        if (seen < lease.windowNanos)
        {
            return 0; // not watched for a window yet
        }
        final long calls = lease.calls.sum();
        final long demand = (long)Math.ceil((double)calls * lease.windowNanos / seen);
        return Math.min(lease.capTokens, Math.min(Integer.MAX_VALUE, Math.max(demand, cost)));
    }

    /** Lapses the block that expired at {@code expiresAt}, unless a new one was installed meanwhile. */
    private void lapseIfStill(final KeyBlock lease, final long expiresAt)
    {
        synchronized (lease)
        {
            if (lease.expiresAtNanos == expiresAt)
            {
                lapse(lease);
            }
        }
    }

    private void lapse(final KeyBlock lease)
    {
        final long left = lease.tokens.getAndSet(0);
        if (left > 0)
        {
            lapsed.add(left);
        }
    }

    /** The key lease {@code descriptor} decides from, or null when its policy is not leased (or no key can be held now). */
    private KeyBlock leaseOf(final Descriptor descriptor)
    {
        final Compiled current = compiled();
        if (current == null || current.index() == null)
        {
            return null;
        }
        if (descriptor.leasesNothingUnder == current.stamp())
        {
            return null;
        }
        final Object slot = descriptor.tokenLease;
        if (slot instanceof Resolved resolved && resolved.version() == current.version() && resolved.owner() == this)
        {
            return resolved.lease();
        }
        // First use under this set (or another client of this process resolved it: a descriptor caches one client's).
        final KeyBlock lease = resolve(current, descriptor);
        if (lease != null)
        {
            descriptor.tokenLease = new Resolved(this, current.version(), lease);
        }
        return lease;
    }

    /**
     * The key lease of {@code descriptor}'s key, or null: when its policy leases nothing (then the
     * descriptor remembers it), or when every key held is in use (then it is looked up again next time).
     */
    private KeyBlock resolve(final Compiled current, final Descriptor descriptor)
    {
        final PolicySetIndex index = current.index();
        final AcquireDecoder decoder = PolicyMatcher.decode(descriptor);
        if (decoder == null)
        {
            descriptor.leasesNothingUnder = current.stamp();
            return null;
        }
        final CompiledPolicy matched = index.match(decoder);
        final CompiledPolicy policy = matched.forRequest(decoder);
        final Policy source = policy.source();
        if (source == null || !source.hasTokenLease() || index.noLimit(matched, matched.forRequest(decoder), decoder) ||
            (index.hasStacked() && index.matchStacked(decoder, new CompiledPolicy[PolicySetIndex.MAX_STACKED_PER_REQUEST]) > 0) ||
            (index.hasShadow() && index.matchShadow(decoder) != null))
        {
            descriptor.leasesNothingUnder = current.stamp();
            return null;
        }
        final TokenLease settings = source.getTokenLease();
        final long percent = settings.getMaxSharePercent() == 0 ? 10 : settings.getMaxSharePercent();
        final long cap = Math.max(1, policy.limit().burstTokens() / 100 * percent + policy.limit().burstTokens() % 100 * percent / 100);
        final long now = clock.getAsLong();
        return byKey.getOrAdd(LocalFallback.scopeKey(policy, descriptor), now, () -> new KeyBlock(this,
            PolicySetIndex.tokenLeaseWindowNanos(settings), PolicySetIndex.tokenLeaseMaxAgeNanos(settings), cap, settings.getHotRate(), now));
    }

    /**
     * A key is kept while it holds a block in date, a block is being asked for, or a node's hot
     * flag holds; any other key ages, and goes when no call looked it up since the table's clock
     * hand last passed.
     */
    private static BoundedKeyTable.KeyFate retention(final KeyBlock lease, final long now)
    {
        final boolean inUse = (lease.answer != null && now - lease.expiresAtNanos < 0) || lease.asking.get() ||
            (lease.hotRate != 0 && lease.hotUntilNanos != 0 && now - lease.hotUntilNanos < 0);
        return inUse ? BoundedKeyTable.KeyFate.KEEP : BoundedKeyTable.KeyFate.AGE;
    }

    /** Now on this table's clock: what {@link #granted}'s {@code askedAtNanos} is read from. */
    long now()
    {
        return clock.getAsLong();
    }

    /** Keys held now (at most {@link #MAX_KEYS}). */
    int keysHeld()
    {
        return byKey.size();
    }

    /** Keys looked at to make room for new ones, so far. */
    long keysExamined()
    {
        return byKey.examined();
    }

    /** A new policy set arrived: leases are looked up again under it (compiled on first use). */
    void policiesChanged(final PolicyCache.Snapshot snapshot)
    {
        pending = snapshot;
        compiled = null;
    }

    /** Compiles what leases are found under now, so that no caller's call does (called on the SDK's callback thread). */
    void prepare()
    {
        compiled();
    }

    /** The set leases are found under; its index is null when no policy of it is leased. */
    private Compiled compiled()
    {
        final Compiled current = compiled;
        if (current != null)
        {
            return current;
        }
        final PolicyCache.Snapshot held = pending;
        if (held == null)
        {
            return null;
        }
        PolicySetIndex index = null;
        if (held.policies().getPoliciesList().stream().anyMatch(Policy::hasTokenLease) || held.policies().getDefaultPolicy().hasTokenLease())
        {
            compiles.increment();
            try
            {
                index = PolicySetIndex.compile(held.policies(), null);
            }
            catch (final IllegalArgumentException e)
            {
                index = null; // the nodes would not have it either: nothing is leased
            }
        }
        final Compiled fresh = new Compiled(held.version(), index, STAMPS.incrementAndGet());
        if (pending == held)
        {
            compiled = fresh;
        }
        return fresh;
    }

    /** Policy sets with a leased policy compiled so far. */
    long compiles()
    {
        return compiles.sum();
    }

    /** Tokens taken from the cluster as blocks. */
    long leased()
    {
        return leased.sum();
    }

    /** Tokens of blocks that callers used (decided locally, or by the call that took the block). */
    long used()
    {
        return used.sum();
    }

    /** Tokens of blocks that lapsed unused (never given back: under-admission). */
    long lapsed()
    {
        return lapsed.sum();
    }
}
