package dev.limiter.server.control;

import dev.limiter.protocol.Limit;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.policy.Policy;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

class VersionRatesTest
{
    private static final Limit TEN =
        PolicySetIndex.limitOf(Policy.newBuilder().setId("a").setRate(10).setBurst(10).build());

    private final VersionRates rates = new VersionRates(1);

    @Test
    void shouldAnswerNullForAVersionNotPublishedAndTheDefaultForAnUnknownOrdinal()
    {
        assertNull(rates.rateIfKnown(0, 1, 0, 0));
        assertEquals(PolicySetIndex.limitOf(PolicySetIndex.BUILT_IN_DEFAULT).burstTokens(),
            rates.latest(3).burstTokens());

        rates.publish(new Limit[] {TEN}, List.of(List.<Limit[]>of(new Limit[] {TEN})), List.of(List.of(false)));

        assertSame(TEN, rates.rateIfKnown(0, 1, 0, 0));
        assertSame(TEN, rates.latest(0));
        assertNull(rates.rateIfKnown(0, 2, 0, 0));
        assertNull(rates.rateIfKnown(0, 1, 1, 0), "no extra limit");
    }

    @Test
    void shouldWakeAWaitingDecisionWhenItsVersionIsPublished() throws Exception
    {
        final CompletableFuture<Limit> waiting = CompletableFuture.supplyAsync(() -> rates.await(0, 1, 0, 0));

        rates.publish(new Limit[] {TEN}, List.of(List.<Limit[]>of(new Limit[] {TEN})), List.of(List.of(false)));

        assertSame(TEN, waiting.get(5, TimeUnit.SECONDS));
    }

    @Test
    void shouldStopWaitingWhenTheNodeStops()
    {
        final CompletableFuture<Limit> waiting = CompletableFuture.supplyAsync(() -> rates.await(0, 1, 0, 0));

        rates.stopWaiting();

        final Exception thrown = assertThrows(Exception.class, () -> waiting.get(5, TimeUnit.SECONDS));
        assertEquals(IllegalStateException.class, thrown.getCause().getClass());
    }
}
