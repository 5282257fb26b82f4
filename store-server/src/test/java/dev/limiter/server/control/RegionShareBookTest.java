package dev.limiter.server.control;

import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicyStateSnapshot;
import dev.limiter.protocol.policy.RegionShares;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RegionShareBookTest
{
    private static final long T0 = 1_796_000_000_000L;

    private final RegionShareBook book = new RegionShareBook(() -> 42);

    private static PolicyCommand shares(final Map<String, Integer> ppm)
    {
        return PolicyState.command("region:eu", T0)
            .setRegionShares(RegionShares.newBuilder().putAllSharePpm(ppm)).build();
    }

    @Test
    void shouldMergeSharesCountGenerationsAndReplyWithTheSetVersion()
    {
        final PolicyState.Outcome first = book.apply(shares(Map.of("orders", 700_000, "search", 100)));
        book.apply(shares(Map.of("orders", 300_000)));

        assertEquals(PolicyState.Status.OK, first.status());
        assertEquals(42, first.result().getSetVersion());
        assertEquals(Map.of("orders", 300_000, "search", 100), book.shares());
        assertEquals(2, book.committed().getGeneration());
    }

    @Test
    void shouldRefuseAShareOutOfRangeAndKeepWhatItHad()
    {
        book.apply(shares(Map.of("orders", 1)));

        final PolicyState.Outcome refused = book.apply(shares(Map.of("orders", 1_000_001)));

        assertEquals(PolicyState.Status.INVALID, refused.status());
        assertEquals("a region's share is 0 to 1,000,000 millionths, was 1000001 for orders",
            refused.error().getError());
        assertEquals(Map.of("orders", 1), book.shares());
        assertEquals(1, book.committed().getGeneration());
    }

    @Test
    void shouldLeaveASnapshotWithoutSharesUntouchedAndRestoreWhatItWrote()
    {
        final PolicyStateSnapshot.Builder empty = PolicyStateSnapshot.newBuilder();
        book.writeTo(empty);
        assertFalse(empty.hasRegionShares(), "no field: snapshots of nodes without regions keep their bytes");

        book.apply(shares(Map.of("orders", 5)));
        final PolicyStateSnapshot.Builder written = PolicyStateSnapshot.newBuilder();
        book.writeTo(written);
        assertTrue(written.hasRegionShares());

        final RegionShareBook restored = new RegionShareBook(() -> 0);
        restored.restoreFrom(written.build());
        assertEquals(book.committed(), restored.committed());
    }
}
