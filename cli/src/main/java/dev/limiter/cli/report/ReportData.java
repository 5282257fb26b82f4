package dev.limiter.cli.report;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What one report shows, merged from every source: the window cut into {@link #buckets()} steps of
 * {@link #stepMillis()}, counts per step (per policy, per region), p99 per node, the degraded steps,
 * and the snapshot tables (hot keys, shadow comparison, rejected decisions, appeals). A section whose
 * source could not say is left empty with a {@code ...Note} saying why, never filled with made-up numbers.
 */
public final class ReportData
{
    /** Counts of one policy kept per step. */
    static final String[] KINDS = {"allowed", "denied", "shadowWouldDeny", "shadowWouldAllow", "falseRejections"};
    static final int ALLOWED = 0;
    static final int DENIED = 1;
    static final int SHADOW_WOULD_DENY = 2;
    static final int SHADOW_WOULD_ALLOW = 3;
    static final int FALSE_REJECTIONS = 4;
    /** How far past the window's end a node's clock may run and still count in its last step. */
    static final long CLOCK_SKEW_MILLIS = 60_000;

    /** A hot key of one node's shard. */
    record HotKeyRow(String node, String key, String scope, String policy, double share, long tokensPerSecond)
    {
    }

    /** One tenant and route of a policy's shadow comparison. */
    record CompareRow(String policy, String tenant, String route, long decisions, long enforcedRejections,
        long predictedRejections, long newlyRejected, long newlyFreed)
    {
    }

    /** Sampled rejected decisions of one policy, tenant and route. */
    record RejectedRow(String policy, String tenant, String route, long sampled)
    {
    }

    /** One appeal of a rejected decision. */
    record AppealRow(long atMillis, String decisionId, String policy, long version, String tenant, String route,
        String owner, String reason)
    {
    }

    /** One SDK's report of a time it decided on its own. */
    record DegradedRow(String client, String detail)
    {
    }

    private final long fromMillis;
    private final long toMillis;
    private final long stepMillis;
    private final int buckets;
    private final String source;
    /** Per policy, per kind, per step. */
    private final Map<String, long[][]> policies = new TreeMap<>();
    /** Per region, allowed and denied per step. */
    private final Map<String, long[][]> regions = new TreeMap<>();
    /** Per node, the p99 in microseconds per step (-1: no value). */
    private final Map<String, long[]> p99 = new TreeMap<>();
    private final boolean[] degraded;
    final List<String> nodes = new ArrayList<>();
    final List<String> notes = new ArrayList<>();
    final List<HotKeyRow> hotKeys = new ArrayList<>();
    final List<CompareRow> compare = new ArrayList<>();
    final List<RejectedRow> rejected = new ArrayList<>();
    final List<AppealRow> appeals = new ArrayList<>();
    final List<DegradedRow> degradedReports = new ArrayList<>();
    String cluster = "";
    String version = "";
    String regionNote;
    String hotKeysNote;
    String compareNote;
    String rejectedNote;
    String appealsNote;
    String falseRejectionsNote;
    String degradedNote;

    /**
     * @param stepMillis the width of a step; the window is cut into whole steps ending at {@code toMillis}
     * @param source     where the series came from, as the header names it
     */
    ReportData(final long fromMillis, final long toMillis, final long stepMillis, final String source)
    {
        this.stepMillis = stepMillis;
        this.buckets = (int)Math.max(1, (toMillis - fromMillis + stepMillis - 1) / stepMillis);
        this.toMillis = toMillis;
        this.fromMillis = toMillis - buckets * stepMillis;
        this.source = source;
        this.degraded = new boolean[buckets];
    }

    /**
     * The step a moment falls in, or -1 outside the window. A moment a little after its end (a node's
     * interval in progress, read just after the report's clock, or a node's clock ahead) is the last step's.
     */
    int bucket(final long atMillis)
    {
        if (atMillis <= fromMillis || atMillis > toMillis + stepMillis + CLOCK_SKEW_MILLIS)
        {
            return -1;
        }
        return (int)Math.min(buckets - 1, (atMillis - fromMillis - 1) / stepMillis);
    }

    /** Adds {@code n} of {@code kind} of {@code policy} to the step ending around {@code atMillis}. */
    void add(final String policy, final int kind, final long atMillis, final long n)
    {
        final int bucket = bucket(atMillis);
        if (bucket >= 0 && n != 0)
        {
            policies.computeIfAbsent(policy, p -> new long[KINDS.length][buckets])[kind][bucket] += n;
        }
    }

    /** Adds allowed ({@code kind} {@link #ALLOWED}) or denied decisions of {@code region}. */
    void addRegion(final String region, final int kind, final long atMillis, final long n)
    {
        final int bucket = bucket(atMillis);
        if (bucket >= 0 && n != 0)
        {
            regions.computeIfAbsent(region, r -> new long[2][buckets])[kind][bucket] += n;
        }
    }

    /** Records a node's p99; a step keeps the highest one reported in it. */
    void p99(final String node, final long atMillis, final long micros)
    {
        final int bucket = bucket(atMillis);
        if (bucket >= 0 && micros > 0)
        {
            final long[] values = p99.computeIfAbsent(node, n -> filled(buckets));
            values[bucket] = Math.max(values[bucket], micros);
        }
    }

    private static long[] filled(final int n)
    {
        final long[] values = new long[n];
        java.util.Arrays.fill(values, -1);
        return values;
    }

    void degraded(final long atMillis)
    {
        final int bucket = bucket(atMillis);
        if (bucket >= 0)
        {
            degraded[bucket] = true;
        }
    }

    long fromMillis()
    {
        return fromMillis;
    }

    long toMillis()
    {
        return toMillis;
    }

    long stepMillis()
    {
        return stepMillis;
    }

    int buckets()
    {
        return buckets;
    }

    String source()
    {
        return source;
    }

    /** Per policy: per kind ({@link #KINDS}), per step. */
    Map<String, long[][]> policies()
    {
        return policies;
    }

    Map<String, long[][]> regions()
    {
        return regions;
    }

    Map<String, long[]> p99()
    {
        return p99;
    }

    boolean[] degraded()
    {
        return degraded;
    }

    /** The sum of {@code kind} of {@code policy} over the window. */
    long total(final String policy, final int kind)
    {
        final long[][] counts = policies.get(policy);
        long sum = 0;
        if (counts != null)
        {
            for (final long n : counts[kind])
            {
                sum += n;
            }
        }
        return sum;
    }

    /** Decisions (allowed and denied, every policy) over the window. */
    long decisions()
    {
        long sum = 0;
        for (final String policy : policies.keySet())
        {
            sum += total(policy, ALLOWED) + total(policy, DENIED);
        }
        return sum;
    }
}
