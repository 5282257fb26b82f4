package dev.limiter.client;

import com.google.protobuf.Duration;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.TokenBucket;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.Scope;
import dev.limiter.protocol.policy.Selector;
import dev.limiter.protocol.policy.TokenLease;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * SDK token leases against one bucket shared by many SDK instances, on a manual clock: the bucket
 * is the table's exact arithmetic ({@link TokenBucket.Rate}), each instance a {@link TokenBlocks}
 * whose blocking calls go through the SDK's {@link TokenBlockStage} (local, else a block or the
 * cost from the bucket).
 */
class TokenBlocksTest
{
    private static final long SECOND = 1_000_000_000L;
    private static final long MS = 1_000_000L;

    private final AtomicLong now = new AtomicLong(1_000 * SECOND);
    /** A circuit with no lane open: every blocking call may ask for a block. */
    private static final Circuit CLOSED_CIRCUIT = new Circuit(null, null, null, () -> false, 3, SECOND, 0);
    private static final Delivery DELIVERY = new Delivery("token-blocks-test-delivery");

    /** The cluster's bucket of one key: exact refill, charges whole blocks. */
    private final class Bucket
    {
        final TokenBucket.Rate rate;
        long units;
        long last = now.get();
        final List<long[]> charges = new ArrayList<>();

        Bucket(final long perSecond, final long burst)
        {
            rate = TokenBucket.rate(perSecond, SECOND, burst);
            units = rate.fullState();
        }

        Decision take(final long tokens)
        {
            final long t = now.get();
            units = rate.refill(units, last, t);
            last = t;
            final boolean ok = rate.available(units, t) >= rate.costUnits(tokens);
            if (ok)
            {
                units = rate.charge(units, rate.costUnits(tokens));
                charges.add(new long[] {t, tokens});
            }
            return new Decision(ok, ok ? ReasonCode.ALLOWED : ReasonCode.RATE_LIMITED, rate.wholeTokens(Math.max(0,
                units)),
                rate.burstTokens(), 0, 0, "hot", 1, 1);
        }
    }

    /** The leased policy's tokenLease.hotRate (0: any key is leased). */
    private long hotRate;

    private PolicyCache holding(final AtomicLong clock, final long rate, final long burst, final int sharePercent)
    {
        final PolicyCache cache = new PolicyCache(java.time.Duration.ofHours(1), clock::get);
        final Policy hot = Policy.newBuilder().setId("hot").setSelector(Selector.newBuilder().setRoute("/hot")).setRate(rate).setBurst(burst)
            .setScope(Scope.GLOBAL).setOwner("t").setTokenLease(TokenLease.newBuilder().setMaxSharePercent(sharePercent)
                .setDemandWindow(Duration.newBuilder().setNanos(50_000_000)).setMaxAge(Duration.newBuilder().setNanos(100_000_000)).setHotRate(hotRate)).build();
        cache.received(1, PolicySet.newBuilder().setVersion(1).addPolicies(hot)
            .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(2).setOwner("t")).build().toByteArray());
        return cache;
    }

    /** Renewals on their way back: {due time, answer, future}. */
    private final List<Object[]> inFlight = new ArrayList<>();
    private java.util.function.LongUnaryOperator renewalDelay = max -> 0;

    /** Delivers the renewals due by now. */
    private void deliver()
    {
        inFlight.removeIf(r ->
        {
            if ((long)r[0] <= now.get())
            {
                @SuppressWarnings("unchecked") final CompletableFuture<Decision> future = (CompletableFuture<Decision>)r[2];
                future.complete((Decision)r[1]);
                return true;
            }
            return false;
        });
    }

    /** One SDK instance: its leases, and the descriptor its callers reuse. */
    private final class Instance
    {
        final TokenBlocks leases;
        final Descriptor hot = Descriptor.of("t", "/hot");
        final Bucket bucket;
        long local;
        long granted;

        Instance(final Bucket bucket, final long rate, final long burst, final int sharePercent)
        {
            this.bucket = bucket;
            // A renewal is charged when asked (the earliest the node can) and lands up to 30 ms later.
            this.leases = new TokenBlocks(holding(now, rate, burst, sharePercent), now::get, (d, block) ->
            {
                final CompletableFuture<Decision> answer = new CompletableFuture<>();
                inFlight.add(new Object[] {now.get() + renewalDelay.applyAsLong(30 * MS), bucket.take(block), answer});
                return answer;
            });
            this.stage = new TokenBlockStage(leases, CLOSED_CIRCUIT, new ShardRouter(null, lane -> false), DELIVERY,
                new CallPath()
            {
                @Override
                public CompletableFuture<Decision> acquire(final Descriptor descriptor, final int cost,
                    final int wireCost,
                    final long deadlineNanos)
                {
                    throw new AssertionError("the stage was called blocking");
                }

                @Override
                public Decision acquireBlocking(final Descriptor descriptor, final int cost, final int wireCost,
                    final long deadlineNanos)
                {
                    return bucket.take(wireCost);
                }
            });
        }

        /** A blocking call through the SDK's {@link TokenBlockStage}, whose next stage is the bucket. */
        final CallPath stage;

        /** Returns whether the call may go ahead. */
        boolean call()
        {
            final Decision answer = stage.acquireBlocking(hot, 1, 1, SECOND);
            if (answer.fromTokenLease())
            {
                assertTrue(answer.allowed());
                local++;
            }
            granted += answer.allowed() ? 1 : 0;
            return answer.allowed();
        }
    }

    @Test
    void manyInstancesOnOneKeyAreGrantedAtMostBurstPlusRateOverTheIntervalAndTheLeasesMaxAge()
    {
        final SplittableRandom random = new SplittableRandom(7);
        renewalDelay = max -> random.nextLong(max + 1);
        long localCalls = 0;
        for (int round = 0; round < 20; round++)
        {
            final long rate = 1_000 + random.nextInt(20_000);
            final long burst = 100 + random.nextInt((int)rate);
            final Bucket bucket = new Bucket(rate, burst);
            final int instances = 2 + random.nextInt(8);
            final List<Instance> sdks = new ArrayList<>();
            for (int i = 0; i < instances; i++)
            {
                sdks.add(new Instance(bucket, rate, burst, 5 + random.nextInt(46)));
            }
            final List<Long> grants = new ArrayList<>();
            final long start = now.get();
            // Shifting, skewed demand beyond the rate: phases of 50 to 600 ms in which only some
            // instances call, one of them most; an instance that falls idle keeps what it leased
            // and finds it again when it comes back (the case maxAge bounds).
            final boolean[] active = new boolean[instances];
            int favourite = 0;
            long phaseEnds = start;
            while (now.get() - start < 4 * SECOND)
            {
                now.addAndGet(random.nextInt(3) == 0 ? 0 : 1 + random.nextInt(40_000));
                if (now.get() >= phaseEnds)
                {
                    if (random.nextInt(4) == 0)
                    {
                        // Everybody idle for a while: the bucket fills up again, leftover blocks stay where they are.
                        now.addAndGet(200 * MS + random.nextLong(800 * MS));
                    }
                    phaseEnds = now.get() + 50 * MS + random.nextLong(550 * MS);
                    favourite = random.nextInt(instances);
                    for (int i = 0; i < instances; i++)
                    {
                        active[i] = i == favourite || random.nextBoolean();
                    }
                }
                deliver();
                int pick = random.nextInt(3) == 0 ? random.nextInt(instances) : favourite;
                if (!active[pick])
                {
                    pick = favourite;
                }
                if (sdks.get(pick).call())
                {
                    grants.add(now.get());
                }
            }
            final long maxAge = 100 * MS;
            // Every window of grants, from each grant on: at most burst + rate x (T + maxAge).
            for (int from = 0; from < grants.size(); from += 1 + grants.size() / 2_000)
            {
                int to = from;
                for (long span : new long[] {1 * MS, 10 * MS, 100 * MS, 500 * MS, 2 * SECOND})
                {
                    while (to < grants.size() && grants.get(to) - grants.get(from) <= span)
                    {
                        to++;
                    }
                    final long bound = burst + (long)Math.floor((double)rate * (span + maxAge) / SECOND);
                    assertTrue(to - from <= bound, "round " + round + ": " + (to - from) + " grants within "
                        + span / MS + " ms, more than " +
                        "burst + rate x (T + maxAge) = " + bound);
                }
            }
            final long used = sdks.stream().mapToLong(s -> s.leases.used()).sum();
            final long leased = sdks.stream().mapToLong(s -> s.leases.leased()).sum();
            final long lapsed = sdks.stream().mapToLong(s -> s.leases.lapsed()).sum();
            assertTrue(used + lapsed <= leased, "every leased token was used or lapsed, once: " + used + " + "
                + lapsed + " > " + leased);
            localCalls += sdks.stream().mapToLong(s -> s.local).sum();
        }
        assertTrue(localCalls > 0, "some calls were decided from leases");
    }

    @Test
    void aBusyKeyIsDecidedLocallyFromBlocksSizedByItsOwnDemandAndUnusedTokensLapse()
    {
        final Bucket bucket = new Bucket(1_000_000, 1_000_000);
        final Instance sdk = new Instance(bucket, 1_000_000, 1_000_000, 10);
        for (int i = 0; i < 100_000; i++)
        {
            now.addAndGet(10_000); // 100,000 calls a second, for a second
            deliver();
            assertTrue(sdk.call());
        }
        // The first 50 ms go to the cluster (the demand is not known yet), then blocks serve the rest.
        assertTrue(sdk.local > 90_000, "most calls were local: " + sdk.local);
        final long blocks = bucket.charges.stream().filter(c -> c[1] > 1).count();
        final long biggest = bucket.charges.stream().mapToLong(c -> c[1]).max().orElse(0);
        assertTrue(biggest <= 100_000 / 20 + 1 && biggest >= 4_000,
            "a block is about 50 ms of this SDK's own demand (5,000): " + biggest);
        assertTrue(blocks >= 10, "blocks as the demand goes on: " + blocks);
        now.addAndGet(SECOND);
        final long lapsedBefore = sdk.leases.lapsed();
        assertNull(sdk.leases.tryLocal(sdk.hot, 1), "a block older than maxAge is not used");
        assertTrue(sdk.leases.lapsed() > lapsedBefore, "its tokens lapse, counted");
        assertEquals(sdk.leases.leased(), sdk.leases.used() + sdk.leases.lapsed(),
            "leased = used + lapsed once nothing is held");
    }

    @Test
    void withAHotRateAKeyIsLeasedOnlyWhileANodeFlagsItHot()
    {
        hotRate = 50_000;
        final Bucket bucket = new Bucket(1_000_000, 1_000_000);
        final Instance sdk = new Instance(bucket, 1_000_000, 1_000_000, 10);
        for (int i = 0; i < 100_000; i++)
        {
            now.addAndGet(10_000); // 100,000 calls a second: busy here, but no node said the key is hot
            deliver();
            assertTrue(sdk.call());
        }
        assertEquals(0, sdk.local, "not flagged hot: every call is the node's");
        assertTrue(bucket.charges.stream().allMatch(c -> c[1] == 1), "and asks for its cost alone");
        sdk.leases.hot(sdk.hot); // an answer carried the node's hot-key flag
        for (int i = 0; i < 100_000; i++)
        {
            now.addAndGet(10_000);
            deliver();
            assertTrue(sdk.call());
        }
        assertTrue(sdk.local > 90_000, "flagged: most calls are decided from blocks: " + sdk.local);
        // No flag for longer than the hold (the key cooled down at the nodes): blocks stop, the last one lapses.
        final long holdCalls = TokenBlocks.HOT_HOLD_NANOS / 10_000;
        for (int i = 0; i < holdCalls; i++)
        {
            now.addAndGet(10_000);
            deliver();
            assertTrue(sdk.call());
        }
        final long localBefore = sdk.local;
        for (int i = 0; i < 100_000; i++)
        {
            now.addAndGet(10_000);
            deliver();
            assertTrue(sdk.call());
        }
        assertEquals(localBefore, sdk.local, "past the hold every call is the node's again");
    }

    @Test
    void twoHundredThousandNewKeysInATightLoopHoldAtMostMaxKeysEachLooksAtABoundedNumberAndABusyKeyKeepsItsLease()
    {
        // Every tenant is a key of its own, as when a service copies a header into the tenant.
        final PolicyCache cache = new PolicyCache(java.time.Duration.ofHours(1), now::get);
        cache.received(1, PolicySet.newBuilder().setVersion(1).addPolicies(Policy.newBuilder().setId("per-tenant")
                .setSelector(Selector.newBuilder().setRoute("/hot")).setRate(1_000_000).setBurst(1_000_000).setScope(Scope.TENANT).setOwner("t")
                .setTokenLease(TokenLease.newBuilder().setMaxSharePercent(10).setDemandWindow(Duration.newBuilder().setNanos(50_000_000))
                    .setMaxAge(Duration.newBuilder().setNanos(100_000_000))))
            .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(2).setOwner("t")).build().toByteArray());
        final Bucket busyBucket = new Bucket(1_000_000, 1_000_000);
        final TokenBlocks leases = new TokenBlocks(cache, now::get, (d, block) ->
        {
            final CompletableFuture<Decision> answer = new CompletableFuture<>();
            inFlight.add(new Object[] {now.get(), busyBucket.take(block), answer});
            return answer;
        });
        leases.prepare();
        long maxExamined = 0;
        long busyCalls = 0;
        long busyLocal = 0;
        for (int i = 0; i < 200_000; i++)
        {
            now.addAndGet(1_000); // 200,000 new keys in 0.2 s: none of them idle yet
            deliver();
            final long examinedBefore = leases.keysExamined();
            final Descriptor newKey = Descriptor.of("caller-" + i, "/hot");
            assertNull(leases.tryLocal(newKey, 1));
            assertEquals(1, leases.toAsk(newKey, 1), "a key seen once is not leased");
            maxExamined = Math.max(maxExamined, leases.keysExamined() - examinedBefore);
            if (i % 4 == 0)
            {
                // The busy tenant, with a descriptor built per call (as the gateway and the servlet filter do).
                final Descriptor busy = Descriptor.of("busy", "/hot");
                busyCalls++;
                if (leases.tryLocal(busy, 1) != null)
                {
                    busyLocal++;
                }
                else
                {
                    final int ask = leases.toAsk(busy, 1);
                    assertTrue(leases.granted(busy, 1, ask, now.get(), busyBucket.take(ask)));
                }
            }
            assertTrue(leases.keysHeld() <= TokenBlocks.MAX_KEYS, "after " + (i + 1) + " new keys: "
                + leases.keysHeld() + " keys held");
        }
        assertTrue(maxExamined <= BoundedKeyTable.SCAN, "keys looked at for one new key: " + maxExamined);
        // Its first window (50 ms of 200) is watched, then blocks serve it: most of the rest is local.
        assertTrue(busyLocal > busyCalls * 7 / 10, "the busy tenant kept its lease through the churn: " + busyLocal
            + " of " + busyCalls + " local");
    }

    @Test
    void aPreparedPolicySetIsCompiledOnceAndNotOnTheFirstCall()
    {
        final TokenBlocks leases = new TokenBlocks(holding(now, 1000, 1000, 10), now::get, (d, b)
            -> new CompletableFuture<>());
        assertEquals(0, leases.compiles(), "nothing compiled while building");
        leases.prepare(); // what the client does when a set arrives, off the callers' threads
        assertEquals(1, leases.compiles());
        leases.tryLocal(Descriptor.of("t", "/hot"), 1);
        leases.toAsk(Descriptor.of("t", "/hot"), 1);
        assertEquals(1, leases.compiles(), "the first call found the set compiled");
    }

    @Test
    void aPolicyWithoutTokenLeaseIsNeverLeased()
    {
        final PolicyCache cache = new PolicyCache(java.time.Duration.ofHours(1), now::get);
        cache.received(1, PolicySet.newBuilder().setVersion(1).addPolicies(Policy.newBuilder().setId("plain")
            .setSelector(Selector.newBuilder().setRoute("/hot")).setRate(1000).setOwner("t"))
            .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(2).setOwner("t")).build().toByteArray());
        final TokenBlocks leases = new TokenBlocks(cache, now::get, (d, b)
            -> { throw new AssertionError("never asks"); });
        final Descriptor hot = Descriptor.of("t", "/hot");
        for (int i = 0; i < 1_000; i++)
        {
            now.addAndGet(MS);
            assertNull(leases.tryLocal(hot, 1));
            assertEquals(1, leases.toAsk(hot, 1));
        }
    }

    @Test
    void aDescriptorThatLeasedNothingUnderOneSetIsLeasedOnceANewSetLeasesItsRoute()
    {
        final PolicyCache cache = new PolicyCache(java.time.Duration.ofHours(1), now::get);
        cache.received(1, setLeasing("/other").setVersion(1).build().toByteArray());
        final AtomicLong asked = new AtomicLong();
        final TokenBlocks first = new TokenBlocks(cache, now::get, (d, b)
            -> { asked.incrementAndGet(); return new CompletableFuture<>(); });
        final Descriptor hot = Descriptor.of("t", "/hot");
        watchDemand(first, hot);
        assertEquals(1, first.toAsk(hot, 1), "/hot leases nothing under set 1");

        cache.received(2, setLeasing("/hot").setVersion(2).build().toByteArray());
        watchDemand(first, hot);
        assertTrue(first.toAsk(hot, 1) > 1, "under set 2 the same descriptor asks for a block");

        // A second client of the process, whose set leases nothing on /hot, shares the descriptor:
        // neither takes the other's "nothing here" for its own.
        final PolicyCache otherCache = new PolicyCache(java.time.Duration.ofHours(1), now::get);
        otherCache.received(2, setLeasing("/other").setVersion(2).build().toByteArray());
        final TokenBlocks second = new TokenBlocks(otherCache, now::get, (d, b) -> new CompletableFuture<>());
        watchDemand(second, hot);
        assertEquals(1, second.toAsk(hot, 1));
        first.granted(hot, 1, 2, now.get(), null); // the first client's ask ends (failed): it may ask again
        watchDemand(first, hot);
        assertTrue(first.toAsk(hot, 1) > 1, "the first client still finds its lease");
    }

    /** Calls on {@code descriptor} for a little more than a demand window, as callers would. */
    private void watchDemand(final TokenBlocks leases, final Descriptor descriptor)
    {
        for (int i = 0; i < 60; i++)
        {
            now.addAndGet(MS);
            assertNull(leases.tryLocal(descriptor, 1));
        }
    }

    private static PolicySet.Builder setLeasing(final String route)
    {
        return PolicySet.newBuilder().addPolicies(Policy.newBuilder().setId("leased").setSelector(Selector.newBuilder().setRoute(route))
            .setRate(1000).setBurst(1000).setScope(Scope.GLOBAL).setOwner("t").setTokenLease(TokenLease.newBuilder().setMaxSharePercent(10)
                .setDemandWindow(Duration.newBuilder().setNanos(50_000_000)).setMaxAge(Duration.newBuilder().setNanos(100_000_000))))
            .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(2).setOwner("t"));
    }
}
