package dev.limiter.server.engine;

import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;

class ShardIdleStrategyTest
{
    @Test
    void aShardWithAFrameQueuedAfterItsEmptyPollDoesNotPark()
    {
        // The frame arrived between the shard's empty poll and its park, while nobody was parked to wake.
        final ShardIdleStrategy strategy = new ShardIdleStrategy(() -> true);
        for (int i = 0; i < ShardIdleStrategy.SPINS_BEFORE_PARK * 3; i++)
        {
            strategy.idle(0);
        }
        assertEquals(0, strategy.parks(), "it looks at the queue once more after saying it parks");
    }

    @Test
    void anIdleShardParksAfterItsSpinsAndSpinsAgainOnceItHasWork()
    {
        final AtomicBoolean queued = new AtomicBoolean(false);
        final ShardIdleStrategy strategy = new ShardIdleStrategy(queued::get);
        for (int i = 1; i < ShardIdleStrategy.SPINS_BEFORE_PARK; i++)
        {
            strategy.idle(0);
        }
        assertEquals(0, strategy.parks(), "spins first");
        strategy.idle(0);
        strategy.idle(0);
        assertEquals(2, strategy.parks(), "then parks (at most a millisecond each)");
        strategy.idle(1);
        strategy.idle(0);
        assertEquals(2, strategy.parks(), "work done: spins again before the next park");
    }
}
