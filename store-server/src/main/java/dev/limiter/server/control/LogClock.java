package dev.limiter.server.control;

import com.google.protobuf.Timestamp;
import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.policy.PolicyCommand;

/**
 * The cluster's wall clock as the control log has seen it: the latest command time applied. It
 * only moves forward, and only with an applied command, so every replica reads the same time.
 * Guarded by {@link PolicyState}.
 */
final class LogClock
{
    private Timestamp now = Timestamp.getDefaultInstance();

    /** Moves to the command's time when that is later. */
    void advance(final PolicyCommand command)
    {
        if (Timestamps.compare(command.getAt(), now) > 0)
        {
            now = command.getAt();
        }
    }

    long millis()
    {
        return PolicyVersions.millis(now);
    }

    Timestamp now()
    {
        return now;
    }

    void restore(final Timestamp at)
    {
        now = at;
    }
}
