package dev.limiter.raft;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/** A test application: a running digest over (index, stamp, payload), plus the stamps it saw. */
final class RecordingStateMachine implements ReplicatedStateMachine
{
    volatile long digest = 17;
    volatile long applied;
    final List<Long> stamps = Collections.synchronizedList(new ArrayList<>());
    volatile int restores;
    static final int SNAPSHOT_PADDING = 20_000;
    /** Captures taken for snapshots. */
    final AtomicInteger captures = new AtomicInteger();
    /** When set, thrown by every capture, as when no direct memory is left for the copy. */
    volatile Error captureFailure;
    /** When set, every snapshot write fails (as on a full disk). */
    volatile boolean failWrites;

    @Override
    public ByteBuffer apply(final long index, final long clusterNanos, final ByteBuffer payload)
    {
        long h = digest * 31 + clusterNanos;
        while (payload.hasRemaining())
        {
            h = h * 131 + payload.get();
        }
        digest = h;
        applied++;
        stamps.add(clusterNanos);
        return ByteBuffer.allocate(8).putLong(0, clusterNanos);
    }

    @Override
    public CapturedState captureSnapshot()
    {
        captures.incrementAndGet();
        final Error failure = captureFailure;
        if (failure != null)
        {
            throw failure;
        }
        final long capturedDigest = digest;
        final long capturedApplied = applied;
        return new CapturedState()
        {
            @Override
            public void writeTo(final OutputStream out) throws IOException
            {
                if (failWrites)
                {
                    throw new IOException("no space left on device (test)");
                }
                final DataOutputStream data = new DataOutputStream(out);
                data.writeLong(capturedDigest);
                data.writeLong(capturedApplied);
                data.write(new byte[SNAPSHOT_PADDING]); // big enough to travel in many chunks when chunks are small
                data.flush();
            }

            @Override
            public void close()
            {
            }
        };
    }

    @Override
    public void restoreSnapshot(final InputStream in) throws IOException
    {
        final DataInputStream data = new DataInputStream(in);
        digest = data.readLong();
        applied = data.readLong();
        data.readFully(new byte[SNAPSHOT_PADDING]);
        restores++;
    }

    @Override
    public void reset()
    {
        digest = 17;
        applied = 0;
        stamps.clear();
    }
}
