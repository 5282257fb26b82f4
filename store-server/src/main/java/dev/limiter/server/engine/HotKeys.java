package dev.limiter.server.engine;

import org.agrona.DirectBuffer;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The busiest bucket keys of one shard, by tokens asked: a 1-in-{@value #SAMPLE_EVERY} sample of
 * the tokens its decisions ask for (a decision of cost c crosses about c / {@value #SAMPLE_EVERY}
 * sample points, so an SDK's token-block ask weighs what it carries) feeds a Space-Saving table of
 * {@value #SLOTS} keys (Metwally et al.: a key's count is over-estimated by at most the count it
 * inherited, which is kept as its error). Single writer: the shard's owner thread; nothing is
 * allocated on the decision path (keys are copied into a fixed array, their first
 * {@value #MAX_KEY_BYTES} bytes). Once a second of decisions the owner publishes an immutable
 * {@link Report} of the top {@value #REPORTED} (the only allocation, once a second) with each one's
 * rate over that second, and halves every count, so the table follows the traffic of the last
 * seconds rather than of all time. A report older than {@link #STALE_NANOS} reads as empty (the
 * shard stopped deciding: it lost the lead, or traffic stopped), and a shard that starts deciding
 * again after that starts a fresh table.
 */
public final class HotKeys
{
    static final int SAMPLE_EVERY = 16;
    static final int SLOTS = 32;
    static final int REPORTED = 5;
    static final int MAX_KEY_BYTES = 96;
    static final long PUBLISH_NANOS = 1_000_000_000L;
    static final long STALE_NANOS = 3 * PUBLISH_NANOS;

    /**
     * One key of a report: its bucket key (a prefix when truncated), its estimated share of the
     * shard's tokens and its rate over the report's window, tokens per second (estimated).
     */
    record Entry(byte[] key, boolean truncated, long sampled, long overestimate, double share, long tokensPerSecond)
    {
    }

    /**
     * The top keys over a window: {@code sampled} sample points (each stands for
     * {@value #SAMPLE_EVERY} tokens) in {@code windowNanos}, counts decayed by half at each report.
     */
    record Report(long windowNanos, long sampled, List<Entry> top, long publishedAtNanos)
    {
        static final Report EMPTY = new Report(0, 0, List.of(), 0);

        /** Share of the sampled decisions that went to the hottest key, 0 without any. */
        double topShare()
        {
            return top.isEmpty() ? 0 : top.get(0).share();
        }
    }

    private final long[] hashes = new long[SLOTS];
    private final long[] counts = new long[SLOTS];
    private final long[] errors = new long[SLOTS];
    /** Sample points of each slot's key since the last report (not decayed): its rate. */
    private final long[] fresh = new long[SLOTS];
    private final int[] lengths = new int[SLOTS];
    private final byte[] keys = new byte[SLOTS * MAX_KEY_BYTES];
    private int used;
    private long untilSample = SAMPLE_EVERY;
    private long random = System.nanoTime() | 1;
    private long samples;
    private long windowStart = Long.MIN_VALUE;
    private volatile Report report = Report.EMPTY;
    /** The last report's keys and rates, for {@link #tokensPerSecond} (owner thread only). */
    private final long[] reportedHashes = new long[REPORTED];
    private final int[] reportedLengths = new int[REPORTED];
    private final long[] reportedRates = new long[REPORTED];
    private int reportedCount;

    /**
     * Called for every decision on the owner thread, with the tokens it asks for; samples about
     * one token in {@value #SAMPLE_EVERY}.
     */
    void decided(final DirectBuffer buffer, final int offset, final int length, final long hash, final long cost, final long nowNanos)
    {
        untilSample -= cost;
        if (untilSample > 0)
        {
            return;
        }
        // The sample points this decision's tokens cross (one for most: costs are small).
        final long weight = 1 + (-untilSample) / SAMPLE_EVERY;
        untilSample = nextGap() - (-untilSample) % SAMPLE_EVERY;
        if (windowStart == Long.MIN_VALUE || nowNanos - windowStart >= STALE_NANOS)
        {
            // The first sample, or the first after the shard stood idle: yesterday's counts say nothing now.
            Arrays.fill(counts, 0);
            Arrays.fill(errors, 0);
            Arrays.fill(fresh, 0);
            used = 0;
            samples = 0;
            reportedCount = 0;
            windowStart = nowNanos;
        }
        samples += weight;
        int min = 0;
        int slot = -1;
        for (int i = 0; i < used; i++)
        {
            if (hashes[i] == hash && lengths[i] == length)
            {
                slot = i;
                break;
            }
            if (counts[i] < counts[min])
            {
                min = i;
            }
        }
        if (slot >= 0)
        {
            counts[slot] += weight;
            fresh[slot] += weight;
        }
        else
        {
            // A new key takes a free slot, or the least counted one's, inheriting its count as its error.
            slot = used < SLOTS ? used++ : min;
            final long inherited = counts[slot]; // 0 for a free slot
            hashes[slot] = hash;
            lengths[slot] = length;
            counts[slot] = inherited + weight;
            errors[slot] = inherited;
            fresh[slot] = weight;
            buffer.getBytes(offset, keys, slot * MAX_KEY_BYTES, Math.min(length, MAX_KEY_BYTES));
        }
        if (nowNanos - windowStart >= PUBLISH_NANOS)
        {
            publish(nowNanos);
        }
    }

    /**
     * Decisions until the next sample: 1 to 2 x {@value #SAMPLE_EVERY} - 1 at random (mean
     * {@value #SAMPLE_EVERY}), so traffic that repeats with a period (round-robin callers) cannot
     * hide from a fixed stride. Xorshift: no allocation, owner thread only.
     */
    private int nextGap()
    {
        long x = random;
        x ^= x << 13;
        x ^= x >>> 7;
        x ^= x << 17;
        random = x;
        return 1 + (int)((x >>> 33) % (2 * SAMPLE_EVERY - 1));
    }

    /**
     * The rate of a key in the last report, tokens per second (estimated from the sample), or 0
     * when it was not among the reported. Owner thread only (read while deciding the key); a few
     * comparisons.
     */
    long tokensPerSecond(final long hash, final int length)
    {
        for (int r = 0; r < reportedCount; r++)
        {
            if (reportedHashes[r] == hash && reportedLengths[r] == length)
            {
                return reportedRates[r];
            }
        }
        return 0;
    }

    /** The last published report, or an empty one once it is stale (any thread). */
    Report report()
    {
        final Report last = report;
        return last != Report.EMPTY && System.nanoTime() - last.publishedAtNanos() > STALE_NANOS ? Report.EMPTY : last;
    }

    private void publish(final long nowNanos)
    {
        final Integer[] order = new Integer[used];
        for (int i = 0; i < used; i++)
        {
            order[i] = i;
        }
        Arrays.sort(order, (a, b) -> Long.compare(counts[b], counts[a]));
        final List<Entry> top = new ArrayList<>(REPORTED);
        final long windowNanos = Math.max(1, nowNanos - windowStart);
        reportedCount = Math.min(REPORTED, used);
        for (int r = 0; r < reportedCount; r++)
        {
            final int i = order[r];
            final int stored = Math.min(lengths[i], MAX_KEY_BYTES);
            final long rate = (long)((double)fresh[i] * SAMPLE_EVERY * 1e9 / windowNanos);
            reportedHashes[r] = hashes[i];
            reportedLengths[r] = lengths[i];
            reportedRates[r] = rate;
            top.add(new Entry(Arrays.copyOfRange(keys, i * MAX_KEY_BYTES, i * MAX_KEY_BYTES + stored), lengths[i] > MAX_KEY_BYTES,
                counts[i], errors[i], (double)counts[i] / samples, rate));
        }
        report = new Report(nowNanos - windowStart, samples, List.copyOf(top), System.nanoTime());
        // Decay: the next window starts with half of this one's weight, so a key that cooled down
        // leaves the table within a few seconds.
        for (int i = 0; i < used; i++)
        {
            counts[i] >>= 1;
            errors[i] >>= 1;
            fresh[i] = 0;
        }
        samples >>= 1;
        windowStart = nowNanos;
    }
}
