package dev.limiter.server.net;

/**
 * How many SDK reports (degraded windows) the whole node sends to the log: every report is a log
 * entry on every replica, so made-up or looping reporters must not be able to flood it.
 * Shared by all connections; reports are rare, so a lock is fine here.
 */
public final class SdkReportGate
{
    static final int PER_SECOND = 50;
    static final int BURST = 500;

    private final AdmissionBucket bucket = new AdmissionBucket(PER_SECOND, BURST, System.nanoTime());

    synchronized boolean tryTake(final long nowNanos)
    {
        return bucket.tryTake(nowNanos);
    }
}
