package dev.limiter.bench.jmh;

import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.AcquireDecoder;
import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.DescriptorField;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.ResultCodec;
import dev.limiter.protocol.ResultDecoder;
import dev.limiter.protocol.policy.PolicySet;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Frame encode/decode, per acquire, in batches of {@value #BATCH}: the SDK's encode, the node's
 * decode with validation, normalisation and policy match, the node's result encode, the SDK's
 * result decode. Reported per entry; {@code -prof gc} shows the allocation per entry. Runs with the
 * Netty flags {@code ./limiter server} uses.
 *
 * <pre>./limiter jmh CodecBenchmark -prof gc</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = { "-Dio.netty.buffer.checkAccessible=false", "-Dio.netty.buffer.checkBounds=false" })
public class CodecBenchmark
{
    static final int BATCH = 64;

    private final AcquireDecoder acquireDecoder = new AcquireDecoder();
    private final ResultDecoder resultDecoder = new ResultDecoder();
    private byte[][] encodedDescriptors;
    private ByteBuf acquireFrame;
    private ByteBuf resultFrame;
    private ByteBuf scratch;
    private PolicySetIndex policies;
    private CompiledPolicy policy;

    @Setup
    public void setUp() throws Exception
    {
        final Path sample = Path.of(System.getProperty("limiter.policies", "config/policies.json"));
        policies = Files.exists(sample) ? PolicySetIndex.fromJson(Files.readString(sample)) :
            PolicySetIndex.compile(PolicySet.getDefaultInstance());
        encodedDescriptors = new byte[BATCH][];
        for (int i = 0; i < BATCH; i++)
        {
            encodedDescriptors[i] = AcquireCodec.encodeFields("tenant-" + i, "user-" + i, "GET", "/v1/orders/" + i, "10.0.0." + i, "eu-west-1");
        }
        scratch = PooledByteBufAllocator.DEFAULT.directBuffer(64 * 1024);
        acquireFrame = PooledByteBufAllocator.DEFAULT.directBuffer(64 * 1024);
        encodeAcquires(acquireFrame);
        policy = policies.policy(0);
        resultFrame = PooledByteBufAllocator.DEFAULT.directBuffer(64 * 1024);
        encodeResults(resultFrame);
    }

    @TearDown(Level.Trial)
    public void tearDown()
    {
        scratch.release();
        acquireFrame.release();
        resultFrame.release();
    }

    private void encodeAcquires(final ByteBuf out)
    {
        out.clear();
        final int start = AcquireCodec.beginBatch(out, MessageType.BATCH_ACQUIRE, 42);
        for (int i = 0; i < BATCH; i++)
        {
            AcquireCodec.appendEntry(out, 1, encodedDescriptors[i]);
        }
        AcquireCodec.finishBatch(out, start, BATCH);
    }

    private void encodeResults(final ByteBuf out)
    {
        out.clear();
        final int start = ResultCodec.beginBatch(out, MessageType.BATCH_RESULT, 42, BATCH);
        for (int i = 0; i < BATCH; i++)
        {
            ResultCodec.putRecord(out, ResultCodec.recordOffset(start, i), true, ReasonCode.ALLOWED, policy.ordinal(),
                i, 100, 0, 1_000_000, 1, 1);
        }
        ResultCodec.beginPolicies(out, 1);
        ResultCodec.appendPolicy(out, policy.ordinal(), policy.idUtf8());
        Frame.finish(out, start);
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public int encodeAcquireBatch()
    {
        encodeAcquires(scratch);
        return scratch.writerIndex();
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long decodeValidateAndMatchAcquireBatch()
    {
        long sum = 0;
        acquireDecoder.wrap(acquireFrame, Frame.HEADER_LENGTH, acquireFrame.writerIndex(), false);
        while (acquireDecoder.next())
        {
            sum += policies.match(acquireDecoder).ordinal() + acquireDecoder.length(DescriptorField.TENANT);
        }
        return sum;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public int encodeResultBatch()
    {
        encodeResults(scratch);
        return scratch.writerIndex();
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long decodeResultBatch()
    {
        resultDecoder.wrap(resultFrame, Frame.HEADER_LENGTH, resultFrame.writerIndex());
        long sum = 0;
        for (int i = 0; i < BATCH; i++)
        {
            sum += resultDecoder.remaining(i) + resultDecoder.retryAfterNanos(i) + (resultDecoder.allowed(i) ? 1 : 0);
        }
        return sum;
    }
}
