package dev.limiter.bench.jmh;

import dev.limiter.protocol.TokenBucket;
import dev.limiter.server.cluster.DecisionsEntry;
import dev.limiter.server.table.BucketKeys;
import dev.limiter.server.table.BucketTable;
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

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * What a replica spends per decision it applies from the log: reading a DECISIONS section's record
 * and replaying it on a committed table (which keeps its digest current), in the compact or the
 * classic layout. Sections of {@value #PER_SECTION} one-token decisions (the size of a busy
 * leader's entry) for tenants {@code tenant-0..keys-1}, 250 us apart, replayed in turn;
 * {@code walk} is the pass that checks an entry's sections before any is applied. Also prints
 * the log bytes per decision of each layout.
 *
 * <pre>./limiter jmh ReplayBenchmark -prof gc</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = { "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED", "-Dagrona.disable.bounds.checks=true" })
public class ReplayBenchmark
{
    static final int PER_SECTION = 2000;

    @Param({ "COMPACT", "CLASSIC" })
    String layout;

    @Param({ "100000" })
    int keys;

    private ByteBuffer[] sections;
    private BucketTable table;
    private DecisionsEntry.Replayer replayer;
    private int next;

    @Setup
    public void setUp()
    {
        final TokenBucket.Rate rate = TokenBucket.rate(1000, TimeUnit.SECONDS.toNanos(1), 2000);
        table = new BucketTable(keys * 3 / 2, keys * 64, ordinal -> rate, true);
        replayer = new DecisionsEntry.Replayer((ordinal, version, limitIndex, shard) -> rate);
        final boolean compact = layout.equals("COMPACT");
        final int count = Math.max(1, keys / PER_SECTION);
        sections = new ByteBuffer[count];
        final UnsafeBuffer key = new UnsafeBuffer(new byte[64]);
        BucketKeys.putPrefix(key, 0, 0, 1);
        long time = TimeUnit.HOURS.toNanos(2);
        long bytes = 0;
        final DecisionsEntry.SectionWriter writer = new DecisionsEntry.SectionWriter(compact, 64 * 1024);
        for (int s = 0; s < count; s++)
        {
            for (int i = 0; i < PER_SECTION; i++)
            {
                final byte[] tenant = ("tenant-" + ((s * PER_SECTION + i) % keys)).getBytes(StandardCharsets.US_ASCII);
                key.putBytes(BucketKeys.PREFIX_LENGTH, tenant);
                time += 250_000;
                writer.append(key, 0, BucketKeys.PREFIX_LENGTH + tenant.length, 0, 1, time);
            }
            sections[s] = writer.take(0, 0);
            bytes += sections[s].remaining();
        }
        System.out.printf("%n%s: %.1f bytes per decision in the log (section headers included)%n", layout,
            bytes / (double)(count * PER_SECTION));
    }

    @Benchmark
    @OperationsPerInvocation(PER_SECTION)
    public int replay()
    {
        final ByteBuffer section = sections[next];
        next = next + 1 == sections.length ? 0 : next + 1;
        return replayer.replaySection(section, 0, table);
    }

    @Benchmark
    @OperationsPerInvocation(PER_SECTION)
    public int walk()
    {
        final ByteBuffer section = sections[next];
        next = next + 1 == sections.length ? 0 : next + 1;
        return DecisionsEntry.sectionEnd(section, 0);
    }
}
