package dev.limiter.server.region;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.server.control.PolicyState;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;

class DemandMeterTest
{
    private static final long SECOND = 1_000_000_000L;

    private final PolicyState state = RegionalOrders.bootstrapped(1);
    private final List<CompiledPolicy> regional = List.of(RegionalOrders.orders(state));
    private final AtomicLong asked = new AtomicLong(5_000); // asked before the meter started: not demand
    private final AtomicLong nanos = new AtomicLong(123 * SECOND);
    private final DemandMeter demand = new DemandMeter(ordinal -> asked.get(), nanos::get);

    @Test
    void theFirstMeasureOfAPolicyLearnsItsCountAndAddsNoDemand()
    {
        assertEquals(0, demand.of("orders"));
        nanos.addAndGet(SECOND);
        demand.measure(regional);
        assertEquals(0, demand.of("orders"));
    }

    @Test
    void aSecondOrMoreBetweenMeasuresGivesTheRateItselfAndLessMovesPartWay()
    {
        demand.measure(regional);
        asked.addAndGet(100);
        nanos.addAndGet(2 * SECOND);
        demand.measure(regional);
        assertEquals(50, demand.of("orders"), 1e-9, "100 over 2 s: a second of memory forgets what came before");

        asked.addAndGet(100);
        nanos.addAndGet(SECOND / 2);
        demand.measure(regional);
        assertEquals(50 + 0.5 * (200 - 50), demand.of("orders"), 1e-9, "200 a second for half a second: half way");
    }

    @Test
    void aCountThatWentBackGivesNoNegativeDemand()
    {
        demand.measure(regional);
        asked.addAndGet(-100); // a shard replaced, say
        nanos.addAndGet(SECOND);
        demand.measure(regional);
        assertEquals(0, demand.of("orders"));
    }
}
