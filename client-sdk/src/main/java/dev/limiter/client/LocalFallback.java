package dev.limiter.client;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.IpAddresses;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.CalendarMonthWindow;
import dev.limiter.protocol.ConcurrencyLimit;
import dev.limiter.protocol.policy.LimitSpec;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.TokenBucket;
import dev.limiter.protocol.policy.CalendarWindow;
import dev.limiter.protocol.policy.FailureMode;
import dev.limiter.protocol.policy.Policy;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * What the SDK decides on its own while no node answers: it matches the request against the
 * policy set it holds, exactly as a node would, and then follows the policy's failure mode. OPEN
 * grants from an emergency budget (by default 10% of the policy's rate and burst) kept per policy
 * and scope exactly as the node keeps buckets: one for a GLOBAL policy, one per tenant, per
 * principal within its tenant, or per client IP; never per raw path, so the routes a template
 * matches share its budget. CLOSED refuses with {@link ReasonCode#CLUSTER_UNAVAILABLE}. Every
 * such decision is flagged degraded. Without a policy set within its TTL, nothing is decided here
 * and the caller gets the failure.
 *
 * <p>Memory is bounded without resetting anybody's budget: at {@link #MAX_BUCKETS} buckets, a new
 * scope takes the place of a full bucket (as good as absent) among the next
 * {@value BoundedKeyTable#SCAN} its table's clock hand looks at; while none of them is full, it
 * shares its policy's overflow bucket, of that policy's size, so the emergency budget stays a
 * budget. Either way a new scope costs a bounded amount of work, however callers churn scopes.
 */
final class LocalFallback
{
    private static final Logger LOG = LoggerFactory.getLogger(LocalFallback.class);
    /** Local buckets kept at most (per table: emergency budgets, recovery ramp), overflow buckets aside. */
    static final int MAX_BUCKETS = 100_000;
    private static final int DEFAULT_PERCENT = 10;

    private final PolicyCache policies;
    private final LongSupplier nanoClock;
    private final long retryAfterNanos;
    private final LimiterClient.OutageListener paging;
    /** SDK instances the nodes last reported (0: unknown): fleet-wide budgets are split by it. */
    private final IntSupplier fleetInstances;
    private final Budgets buckets = new Budgets();
    private final AtomicLong degradedAllowed = new AtomicLong();
    private final AtomicLong degradedDenied = new AtomicLong();
    /** Local decisions by "policy id, failure mode, allowed|denied" (for metrics by route and mode). */
    private final ConcurrentHashMap<String, LongAdder> byPolicy = new ConcurrentHashMap<>();
    private volatile Consumer<String> newKeyListener = key -> { };
    private volatile Compiled compiled;
    /** Policies already paged for in this outage. */
    private final Set<String> paged = ConcurrentHashMap.newKeySet();

    private record Compiled(long version, PolicySetIndex index)
    {
    }

    /**
     * One table of local buckets by policy and scope, at most {@link #MAX_BUCKETS}, and the
     * overflow bucket of each policy version that new scopes share while the table is full of
     * buckets in use.
     */
    private static final class Budgets
    {
        final BoundedKeyTable<String, LocalBucket> table = new BoundedKeyTable<>(MAX_BUCKETS, BoundedKeyTable.WhenFull.REFUSE,
            (bucket, now) -> bucket.isFull(now) ? BoundedKeyTable.KeyFate.DROP : BoundedKeyTable.KeyFate.KEEP);
        /** By policy id and version: what nodes send, not what callers choose. */
        final ConcurrentHashMap<String, LocalBucket> overflow = new ConcurrentHashMap<>();

        /**
         * The bucket of this policy and scope: the node's bucket key, so a budget covers what the
         * policy limits as one (all the paths of a route template, say).
         */
        LocalBucket bucket(final CompiledPolicy policy, final Descriptor descriptor, final long now, final Supplier<LocalBucket> fresh)
        {
            final LocalBucket held = table.getOrAdd(scopeKey(policy, descriptor), now, fresh);
            if (held != null)
            {
                return held;
            }
            // Every budget looked at is in use: the new scope shares this policy's overflow bucket (bounded, never reset).
            return overflow.computeIfAbsent(policy.id() + '\u0000' + policy.version(), k -> fresh.get());
        }

        int size()
        {
            return table.size() + overflow.size();
        }

        void clear()
        {
            table.clear();
            overflow.clear();
        }
    }

    private static final class LocalBucket
    {
        final TokenBucket.Rate rate;
        long units;
        long last;

        LocalBucket(final TokenBucket.Rate rate, final long now)
        {
            this(rate, now, false);
        }

        LocalBucket(final TokenBucket.Rate rate, final long now, final boolean empty)
        {
            this.rate = rate;
            this.units = empty ? 0 : rate.burstUnits();
            this.last = now;
        }

        synchronized boolean isFull(final long now)
        {
            return rate.refill(units, last, now) >= rate.burstUnits();
        }

        /** Takes {@code cost} tokens if there are; a cost of 0 is a check: is one token there? (nothing taken). */
        synchronized long[] take(final long cost, final long now)
        {
            units = rate.refill(units, last, now);
            last = Math.max(last, now);
            final long costUnits = rate.costUnits(Math.max(1, cost));
            final boolean allowed = cost <= rate.burstTokens() && units >= costUnits;
            if (allowed && cost > 0)
            {
                units -= costUnits;
            }
            return new long[] {allowed ? 1 : 0, rate.wholeTokens(units), allowed ? 0 : rate.nanosUntil(units, costUnits)};
        }
    }

    LocalFallback(final PolicyCache policies, final LongSupplier nanoClock, final long retryAfterNanos, final LimiterClient.OutageListener paging,
        final IntSupplier fleetInstances)
    {
        this.fleetInstances = fleetInstances;
        this.policies = policies;
        this.nanoClock = nanoClock;
        this.retryAfterNanos = retryAfterNanos;
        this.paging = paging;
    }

    /** Compiles the held set's index now (if not yet), so that the first local decision does not. */
    void prepare()
    {
        index();
    }

    /** The local decision, or null when no usable policy set is held (the caller then gets the failure). */
    Decision decide(final Descriptor descriptor, final int cost, final String why)
    {
        final PolicySetIndex index = index();
        if (index == null)
        {
            return null;
        }
        final CompiledPolicy policy = PolicyMatcher.match(index, descriptor);
        if (PolicyMatcher.noLimit(index, policy, descriptor))
        {
            return new Decision(true, ReasonCode.NO_LIMIT, 0, 0, 0, 0, policy.id(), policy.version(), 0, true);
        }
        final Policy source = policy.source();
        if (source.getFailureMode() == FailureMode.CLOSED)
        {
            degradedDenied.incrementAndGet();
            count(policy.id(), FailureMode.CLOSED, false);
            page(policy, FailureMode.CLOSED, "no node answered (" + why + "); fail-closed policy " + policy.id() + " refuses");
            return new Decision(false, ReasonCode.CLUSTER_UNAVAILABLE, 0, policy.limit().burstTokens(), retryAfterNanos, retryAfterNanos,
                policy.id(), policy.version(), policy.windowSeconds(), true);
        }
        if (source.getEmergency().getPage())
        {
            page(policy, FailureMode.OPEN, "no node answered (" + why + "); policy " + policy.id() + " runs on its emergency budget");
        }
        final long now = nanoClock.getAsLong();
        final LocalBucket bucket = buckets.bucket(policy, descriptor, now,
            () -> new LocalBucket(emergencyRate(source, policy.limit(), fleetInstances.getAsInt()), now));
        final long[] taken = bucket.take(cost, now);
        final boolean allowed = taken[0] == 1;
        (allowed ? degradedAllowed : degradedDenied).incrementAndGet();
        count(policy.id(), FailureMode.OPEN, allowed);
        return new Decision(allowed, ReasonCode.LOCAL_EMERGENCY, taken[1], bucket.rate.burstTokens(), taken[2], 0, policy.id(),
            policy.version(), policy.windowSeconds(), true);
    }

    /** Policy, version and the scope part a node keys the bucket by. */
    static String scopeKey(final CompiledPolicy policy, final Descriptor descriptor)
    {
        final String scope = switch (policy.scope())
        {
            case GLOBAL -> "";
            case PRINCIPAL -> descriptor.tenant() + '\u0000' + descriptor.principal();
            case CLIENT_IP -> canonicalIp(descriptor.clientIp());
            default -> descriptor.tenant();
        };
        return policy.id() + '\u0000' + policy.version() + '\u0000' + scope;
    }

    /** One spelling per address (as the node's 16-byte key): ::ffff:10.0.0.1 and 10.0.0.1 are one client. */
    private static String canonicalIp(final String ip)
    {
        final byte[] value = new byte[IpAddresses.LENGTH];
        final ByteBuf text = Unpooled.wrappedBuffer(ip.getBytes(StandardCharsets.US_ASCII));
        return IpAddresses.parse(text, 0, text.readableBytes(), value, 0) ?
            HexFormat.of().formatHex(value) : ip;
    }

    private void count(final String policyId, final FailureMode mode, final boolean allowed)
    {
        final String key = policyId + '|' + mode + '|' + (allowed ? "allowed" : "denied");
        LongAdder counter = byPolicy.get(key);
        if (counter == null)
        {
            counter = byPolicy.computeIfAbsent(key, k -> new LongAdder());
            newKeyListener.accept(key);
        }
        counter.increment();
    }

    /** Called with each new "policy|MODE|outcome" key as local decisions first happen for it. */
    void onNewKey(final Consumer<String> listener)
    {
        newKeyListener = listener;
        byPolicy.keySet().forEach(listener);
    }

    /** Every count so far, by "policy|MODE|outcome" (a copy). */
    Map<String, Long> counts()
    {
        final Map<String, Long> copy = new HashMap<>();
        byPolicy.forEach((key, counter) -> copy.put(key, counter.sum()));
        return copy;
    }

    long count(final String key)
    {
        final LongAdder counter = byPolicy.get(key);
        return counter == null ? 0 : counter.sum();
    }

    private final Budgets rampBuckets = new Budgets();
    private final AtomicLong rampRefusals = new AtomicLong();

    /**
     * Recovery ramp: right after an outage, a call first takes from a local bucket at the policy's
     * rate that starts empty, so what this SDK lets through to the cluster grows at the policy's
     * rate instead of releasing pent-up demand (and a fresh burst) at once.
     *
     * @return null to go on to the cluster, or the local refusal
     */
    Decision ramp(final Descriptor descriptor, final int cost)
    {
        final PolicySetIndex index = index();
        if (index == null || cost == 0) // a check takes nothing the ramp could hold back
        {
            return null;
        }
        final CompiledPolicy policy = PolicyMatcher.match(index, descriptor);
        if (PolicyMatcher.noLimit(index, policy, descriptor))
        {
            return null;
        }
        final long now = nanoClock.getAsLong();
        final LocalBucket bucket = rampBuckets.bucket(policy, descriptor, now, () -> new LocalBucket(policy.limit().asTokenBucket(), now, true));
        final long[] taken = bucket.take(cost, now);
        if (taken[0] == 1)
        {
            return null;
        }
        rampRefusals.incrementAndGet();
        return new Decision(false, ReasonCode.RATE_LIMITED, 0, bucket.rate.burstTokens(), taken[2], bucket.rate.nanosUntilFull(0),
            policy.id(), policy.version(), policy.windowSeconds(), true);
    }

    /** A new ramp begins: its buckets start empty. */
    void startRamp()
    {
        rampBuckets.clear();
    }

    /** Emergency buckets held now (overflow buckets included). */
    int bucketCount()
    {
        return buckets.size();
    }

    /** Emergency buckets looked at to make room for new scopes, so far. */
    long bucketsExamined()
    {
        return buckets.table.examined();
    }

    long rampRefusals()
    {
        return rampRefusals.get();
    }

    /** Local decisions that allowed, and that refused, since the client started. */
    long degradedAllowed()
    {
        return degradedAllowed.get();
    }

    long degradedDenied()
    {
        return degradedDenied.get();
    }

    /** The cluster answered again: local budgets start afresh at the next outage. */
    void recovered()
    {
        buckets.clear();
        paged.clear();
    }

    private void page(final CompiledPolicy policy, final FailureMode mode, final String message)
    {
        // Once per policy and outage: a page, not a log line per request.
        if (!paged.add(policy.id()))
        {
            return;
        }
        LOG.error("limiter cluster unreachable: {}", message);
        if (paging != null)
        {
            try
            {
                paging.outage(policy.id(), mode, message);
            }
            catch (final RuntimeException e)
            {
                LOG.warn("the paging listener failed: {}", e.toString());
            }
        }
    }

    /** A limit's period in nanoseconds: a calendar month's average, its period, or 1 s. */
    private static long periodNanos(final CalendarWindow calendar, final boolean hasPeriod, final com.google.protobuf.Duration period)
    {
        if (calendar == CalendarWindow.MONTH)
        {
            return CalendarMonthWindow.AVERAGE_MONTH_SECONDS * 1_000_000_000L;
        }
        return hasPeriod ? period.getSeconds() * 1_000_000_000L + period.getNanos() : 1_000_000_000L;
    }

    /**
     * Emergency budget: an absolute rate per the policy's period, or a share of rate and burst (at
     * least 1 each). Unless the policy says per instance, that is the fleet's budget and this SDK
     * takes 1/{@code instances} of it (rate exactly, as the same tokens over a period that many
     * times longer; burst rounded down, at least 1).
     *
     * @param instances SDK instances the nodes last reported; 0 or 1: the whole budget
     */
    static TokenBucket.Rate emergencyRate(final Policy source, final Limit policyLimit, final int instances)
    {
        // A calendar month has no period of its own: the average month, as its local budgets use.
        // A concurrency limit's budget is grants per lease TTL (local decisions see no releases).
        long periodNanos = policyLimit instanceof ConcurrencyLimit concurrency ? concurrency.ttlNanos() :
            periodNanos(source.getCalendarWindow(), source.hasPeriod(), source.getPeriod());
        final long policyRate = source.getMaxConcurrent() != 0 ? source.getMaxConcurrent() : source.getRate();
        long rate;
        long burst;
        if (source.getEmergency().getRate() > 0)
        {
            rate = source.getEmergency().getRate();
            burst = rate;
        }
        else
        {
            final int percent = source.getEmergency().getPercent() == 0 ? DEFAULT_PERCENT : source.getEmergency().getPercent();
            rate = Math.max(1, policyRate * percent / 100);
            burst = Math.max(1, policyLimit.burstTokens() * percent / 100);
            // Several limits: the budget is the share of the tightest (the slowest long-run rate, the
            // smallest burst), so it stays within the share of every one of them.
            for (final LimitSpec limit : source.getLimitsList())
            {
                final long limitRate = Math.max(1, limit.getRate() * percent / 100);
                final long limitPeriod = periodNanos(limit.getCalendarWindow(), limit.hasPeriod(), limit.getPeriod());
                if ((double)limitRate / limitPeriod < (double)rate / periodNanos)
                {
                    rate = limitRate;
                    periodNanos = limitPeriod;
                }
                burst = Math.min(burst, Math.max(1, (limit.getBurst() == 0 ? limit.getRate() : limit.getBurst()) * percent / 100));
            }
        }
        final int share = source.getEmergency().getPerInstance() ? 1 : Math.max(1, instances);
        if (share == 1)
        {
            return TokenBucket.approximately(rate, periodNanos, burst);
        }
        final long shareBurst = Math.max(1, burst / share);
        if (periodNanos <= Long.MAX_VALUE / share)
        {
            try
            {
                return TokenBucket.rate(rate, periodNanos * share, shareBurst);
            }
            catch (final IllegalArgumentException beyondExactArithmetic)
            {
                // fall through: a whole number of tokens per period instead
            }
        }
        return TokenBucket.approximately(Math.max(1, rate / share), periodNanos, shareBurst);
    }

    private PolicySetIndex index()
    {
        final Optional<PolicyCache.Snapshot> held = policies.current();
        if (held.isEmpty())
        {
            return null;
        }
        final Compiled current = compiled;
        if (current != null && current.version() == held.get().version())
        {
            return current.index();
        }
        try
        {
            // What decides locally: the enforced versions only (shadows never decide; stacked scopes
            // are the cluster's to charge atomically).
            final PolicySetIndex index = PolicySetIndex.compile(PolicySetIndex.enforcedOnly(held.get().policies()).build(), null);
            compiled = new Compiled(held.get().version(), index);
            return index;
        }
        catch (final IllegalArgumentException e) // PolicyValidationException included
        {
            LOG.warn("cannot decide locally: the held policy set (version {}) does not compile here: {}", held.get().version(), e.getMessage());
            return null;
        }
    }
}
