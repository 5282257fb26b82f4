package dev.limiter.server.engine;

import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ShardIdleStrategyTest
{
    @Test
    void aShardWithAFrameQueuedAfterItsEmptyPollDoesNotPark()
    {
        // The frame arrived between the shard's empty poll and its park, while nobody was parked to wake.
        final ShardIdleStrategy[] strategy = new ShardIdleStrategy[1];
        final AtomicBoolean saidItParksFirst = new AtomicBoolean(true);
        strategy[0] = new ShardIdleStrategy(() ->
        {
            // A producer that offers now and then looks for a parked thread must find this one.
            saidItParksFirst.compareAndSet(true, strategy[0].parkedThread() == Thread.currentThread());
            return true;
        });
        for (int i = 0; i < ShardIdleStrategy.SPINS_BEFORE_PARK * 3; i++)
        {
            strategy[0].idle(0);
        }
        assertEquals(0, strategy[0].parks(), "it looks at the queue once more after saying it parks");
        assertTrue(saidItParksFirst.get(), "and says it parks before that look, so a later offer wakes it");
        assertNull(strategy[0].parkedThread(), "and no longer once it goes back to work");
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
