package dev.limiter.server.testing;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Netty's leak detector, but leaks are also recorded so tests can fail on them. Installed for
 * every store-server test JVM with {@code -Dio.netty.customResourceLeakDetector} (see the pom);
 * the leak level is paranoid, so every buffer is tracked.
 */
public final class RecordingLeakDetector<T> extends ResourceLeakDetector<T>
{
    private static final List<String> LEAKS = new CopyOnWriteArrayList<>();

    @SuppressWarnings("deprecation")
    public RecordingLeakDetector(final Class<?> resourceType, final int samplingInterval)
    {
        super(resourceType, samplingInterval);
    }

    public RecordingLeakDetector(final Class<?> resourceType, final int samplingInterval, final long maxActive)
    {
        this(resourceType, samplingInterval);
    }

    @Override
    protected void reportTracedLeak(final String resourceType, final String records)
    {
        LEAKS.add(resourceType + " leaked:" + records);
        super.reportTracedLeak(resourceType, records);
    }

    @Override
    protected void reportUntracedLeak(final String resourceType)
    {
        LEAKS.add(resourceType + " leaked (untraced)");
        super.reportUntracedLeak(resourceType);
    }

    /** Collects garbage and allocates until leaked buffers have been reported; returns every leak seen. */
    public static List<String> collectLeaks() throws InterruptedException
    {
        for (int round = 0; round < 5; round++)
        {
            System.gc();
            Thread.sleep(50);
            for (int i = 0; i < 100; i++)
            {
                // Leak reports are delivered when new buffers are tracked.
                final ByteBuf probe = PooledByteBufAllocator.DEFAULT.directBuffer(16);
                probe.release();
            }
        }
        return List.copyOf(LEAKS);
    }

    /** Whether this detector is the one Netty uses (so a clean result means something). */
    public static boolean installed()
    {
        return System.getProperty("io.netty.customResourceLeakDetector",
            "").equals(RecordingLeakDetector.class.getName());
    }
}
