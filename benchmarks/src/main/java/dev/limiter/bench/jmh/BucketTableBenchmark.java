package dev.limiter.bench.jmh;

import dev.limiter.protocol.ConcurrencyLimit;
import dev.limiter.protocol.FixedWindow;
import dev.limiter.protocol.Gcra;
import dev.limiter.protocol.Limit;
import dev.limiter.protocol.SlidingWindow;
import dev.limiter.protocol.TokenBucket;
import dev.limiter.server.table.BucketTable;
import dev.limiter.server.table.KeyHash;
import dev.limiter.protocol.Verdict;
import org.agrona.concurrent.UnsafeBuffer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * One decision in the off-heap table: hash lookup with full key comparison, refill, charge,
 * store. Time advances 1 us per decision, keys cycle through {@code keys} buckets. Runs with the
 * flags {@code ./limiter server} uses (Agrona bounds checks off). {@code tracksDigest} shows what
 * keeping the content digest current costs a replica per replayed decision. {@code algorithm}
 * picks the limit (1000 per second, burst 1000): one of the policy algorithms, or {@code MIXED}, the
 * four of them on alternate keys (a node whose policies use several: the table's calls to the
 * limit are then megamorphic).
 *
 * <pre>./limiter jmh BucketTableBenchmark -prof gc
 * ./limiter jmh 'BucketTableBenchmark.decide$' -p keys=10000 -p tableBuckets=0 -p tracksDigest=false \
 *     -p algorithm=TOKEN_BUCKET,GCRA,FIXED_WINDOW,SLIDING_WINDOW,CONCURRENCY,MIXED -prof gc</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = { "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED", "-Dagrona.disable.bounds.checks=true" })
public class BucketTableBenchmark
{
    @Param({ "10000", "1000000" })
    int keys;

    /** Table capacity in buckets; 0 sizes it for the keys (1.5x), otherwise e.g. the server default 734003. */
    @Param({ "0", "734003" })
    int tableBuckets;

    /** Whether the table keeps its digest current (a cluster's committed tables do; deciding ones do not). */
    @Param({ "false", "true" })
    boolean tracksDigest;

    /**
     * TOKEN_BUCKET, GCRA, FIXED_WINDOW, SLIDING_WINDOW, CONCURRENCY (1000 leases of 60 s, never
     * released: keys fill up and then refuse, as a leaked-lease key does) or MIXED (the first four, by key).
     */
    @Param({ "TOKEN_BUCKET" })
    String algorithm;

    private BucketTable table;
    /** The limit of each key. */
    private Limit[] limits;
    private UnsafeBuffer keyBuffer;
    private int[] keyOffsets;
    private int[] keyLengths;
    private long[] hashes;
    private final Verdict verdict = new Verdict();
    private long now;
    private int next;

    @Setup
    public void setUp()
    {
        final Limit[] kinds = {TokenBucket.rate(1000, 1_000_000_000L, 1000), new Gcra(TokenBucket.rate(1000, 1_000_000_000L, 1000)),
            new FixedWindow(1000, 1_000_000_000L), new SlidingWindow(1000, 1_000_000_000L), new ConcurrencyLimit(1000, 60_000_000_000L)};
        final java.util.List<String> names = java.util.List.of("TOKEN_BUCKET", "GCRA", "FIXED_WINDOW", "SLIDING_WINDOW", "CONCURRENCY");
        limits = new Limit[keys];
        for (int i = 0; i < keys; i++)
        {
            limits[i] = "MIXED".equals(algorithm) ? kinds[i & 3] : kinds[names.indexOf(algorithm)];
        }
        final int capacity = tableBuckets == 0 ? keys + keys / 2 : Math.max(tableBuckets, keys + keys / 2);
        // Every key under ordinal 0; sweeps are not measured here (the table is sized for the keys).
        table = new BucketTable(capacity, capacity * 32, ordinal -> limits[0], tracksDigest);
        table.wallClockOffset(1_796_000_000_000_000_000L);
        final byte[] bytes = new byte[keys * 24];
        keyBuffer = new UnsafeBuffer(bytes);
        keyOffsets = new int[keys];
        keyLengths = new int[keys];
        hashes = new long[keys];
        int at = 0;
        for (int i = 0; i < keys; i++)
        {
            final byte[] key = ("\u0000\u0001tenant-" + i).getBytes(StandardCharsets.UTF_8);
            keyBuffer.putBytes(at, key);
            keyOffsets[i] = at;
            keyLengths[i] = key.length;
            hashes[i] = KeyHash.hash(keyBuffer, at, key.length);
            at += key.length;
        }
        final int[] order = new int[keys];
        for (int i = 0; i < keys; i++)
        {
            order[i] = i;
        }
        final java.util.SplittableRandom random = new java.util.SplittableRandom(42);
        for (int i = keys - 1; i > 0; i--)
        {
            final int j = random.nextInt(i + 1);
            final int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        section = new UnsafeBuffer(new byte[bytes.length]);
        sectionOffsets = new int[keys];
        sectionLengths = new int[keys];
        sectionHashes = new long[keys];
        sectionLimits = new Limit[keys];
        int sectionAt = 0;
        for (int k = 0; k < keys; k++)
        {
            final int i = order[k];
            section.putBytes(sectionAt, keyBuffer, keyOffsets[i], keyLengths[i]);
            sectionOffsets[k] = sectionAt;
            sectionLengths[k] = keyLengths[i];
            sectionHashes[k] = hashes[i];
            sectionLimits[k] = limits[i];
            sectionAt += keyLengths[i];
        }
        now = 1_000_000_000L;
        for (int i = 0; i < keys; i++)
        {
            table.acquire(keyBuffer, keyOffsets[i], keyLengths[i], hashes[i], 0, limits[i], 1, now, verdict);
        }
    }

    @Benchmark
    public boolean decide()
    {
        final int i = next;
        next = i + 1 == keys ? 0 : i + 1;
        now += 1_000;
        table.acquire(keyBuffer, keyOffsets[i], keyLengths[i], hashes[i], 0, limits[i], 1, now, verdict);
        return verdict.allowed();
    }

    /** Ids of the leases {@link #leaseThenRelease} takes. */
    private long leaseIds;

    /**
     * A lease's whole life on a CONCURRENCY key: one acquire, the record of the lease it took, then
     * the release of that lease (with other algorithms no lease is taken and the release finds
     * nothing to give back).
     *
     * <pre>./limiter jmh 'BucketTableBenchmark.leaseThenRelease' -p keys=10000 -p tableBuckets=0 -p tracksDigest=false \
     *     -p algorithm=CONCURRENCY -prof gc</pre>
     */
    @Benchmark
    public boolean leaseThenRelease()
    {
        final int i = next;
        next = i + 1 == keys ? 0 : i + 1;
        now += 1_000;
        table.acquire(keyBuffer, keyOffsets[i], keyLengths[i], hashes[i], 0, limits[i], 1, now, verdict);
        final boolean allowed = verdict.allowed();
        final long id = ++leaseIds;
        if (allowed && limits[i].leases())
        {
            table.takeLease(keyBuffer, keyOffsets[i], keyLengths[i], hashes[i], 0, limits[i], id, limits[i].costUnits(1), verdict.timeNanos(),
                now, verdict);
        }
        table.releaseLease(keyBuffer, keyOffsets[i], keyLengths[i], hashes[i], limits[i], id, now, verdict);
        return allowed;
    }

    /** The keys again, in a shuffled order and back to back, as a log section brings them to a replica. */
    private UnsafeBuffer section;
    private int[] sectionOffsets;
    private int[] sectionLengths;
    private long[] sectionHashes;
    private Limit[] sectionLimits;
    private int nextInSection;
    private final int[] touched = new int[BATCH];
    private static final int BATCH = 16;

    /**
     * {@link #BATCH} decisions of shuffled keys read from a section, one after another: how a
     * replica's replay decides. Score per decision.
     */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long decideShuffledBatch()
    {
        return decideSectionBatch();
    }

    /** The same batch, its slots and then its stored keys touched first so that their cache misses overlap. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long decideShuffledBatchTouchedFirst()
    {
        int at = nextInSection;
        for (int b = 0; b < BATCH; b++)
        {
            touched[b] = table.touchSlot(sectionHashes[at]);
            at = at + 1 == keys ? 0 : at + 1;
        }
        long sum = 0;
        for (int b = 0; b < BATCH; b++)
        {
            sum += table.touchKey(touched[b]);
        }
        return sum + decideSectionBatch();
    }

    /** Decides the next {@link #BATCH} keys of the section in order; returns how many were allowed. */
    private long decideSectionBatch()
    {
        long allowed = 0;
        for (int b = 0; b < BATCH; b++)
        {
            final int i = nextInSection;
            nextInSection = i + 1 == keys ? 0 : i + 1;
            now += 1_000;
            table.acquire(section, sectionOffsets[i], sectionLengths[i], sectionHashes[i], 0, sectionLimits[i], 1, now, verdict);
            allowed += verdict.allowed() ? 1 : 0;
        }
        return allowed;
    }

    @Benchmark
    public long hashOnly()
    {
        final int i = next;
        next = i + 1 == keys ? 0 : i + 1;
        return KeyHash.hash(keyBuffer, keyOffsets[i], keyLengths[i]);
    }
}
