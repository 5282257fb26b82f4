package dev.limiter.server.region;

import dev.limiter.server.control.PolicyState;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Three Raft groups, their logs faked; the shares this node applied are of generation 1. */
class GroupCopierTest
{
    private final PolicyState state = RegionalOrders.bootstrapped(3);
    private final FakeRegionGroups groups = new FakeRegionGroups(3);
    private final GroupCopier copier = new GroupCopier(state, groups);

    @Test
    void onlyTheGroupsThisNodeLeadsWhoseCopyIsOlderGetTheShares()
    {
        RegionalOrders.commit(state, 600_000);
        groups.decides[2] = true;
        copier.copy();
        assertEquals(List.of("2@1"), groups.proposed, "group 1's leader is another node");

        groups.apply(2, state.committedShares());
        copier.copy();
        assertEquals(List.of("2@1"), groups.proposed, "group 2's copy is as new as the shares");
    }

    @Test
    void aGroupHasOneCopyInFlightAndOneThatFailedIsMadeAgain()
    {
        RegionalOrders.commit(state, 600_000);
        groups.decides[1] = true;
        final CompletableFuture<Void> inFlight = new CompletableFuture<>();
        groups.holdNext = inFlight;
        copier.copy();
        copier.copy();
        assertEquals(List.of("1@1"), groups.proposed);

        inFlight.completeExceptionally(new IllegalStateException("not committed"));
        copier.copy();
        assertEquals(List.of("1@1", "1@1"), groups.proposed);
    }
}
