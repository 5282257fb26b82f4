package dev.limiter.server.control;

import dev.limiter.protocol.policy.ChangeResult;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.RegionShares;
import dev.limiter.protocol.policy.Tick;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CommandTableTest
{
    private static final long T0 = 1_796_000_000_000L;

    private final List<PolicyCommand> seen = new ArrayList<>();

    private PolicyState.Outcome record(final PolicyCommand command)
    {
        seen.add(command);
        return PolicyState.Outcome.ok(ChangeResult.newBuilder().setSetVersion(seen.size()).build());
    }

    @Test
    void shouldHandEachCommandToTheOwnerOfItsType()
    {
        final List<PolicyCommand> shares = new ArrayList<>();
        final CommandTable table = new CommandTable()
            .on(PolicyCommand.ChangeCase.TICK, CommandTable.Audience.POLICY_SET, this::record)
            .on(PolicyCommand.ChangeCase.REGION_SHARES, CommandTable.Audience.REGION_SHARES, c ->
            {
                shares.add(c);
                return PolicyState.Outcome.ok(null);
            });
        final PolicyCommand tick = PolicyState.command("n1", T0).setTick(Tick.getDefaultInstance()).build();
        final PolicyCommand share = PolicyState.command("region:eu", T0)
            .setRegionShares(RegionShares.newBuilder().putSharePpm("orders", 1)).build();

        assertEquals(1, table.apply(tick).result().getSetVersion(), "the owner's reply is the entry's reply");
        table.apply(share);

        assertEquals(List.of(tick), seen);
        assertEquals(List.of(share), shares);
        assertEquals(CommandTable.Audience.POLICY_SET, table.audience(PolicyCommand.ChangeCase.TICK));
        assertEquals(CommandTable.Audience.REGION_SHARES, table.audience(PolicyCommand.ChangeCase.REGION_SHARES));
    }

    @Test
    void shouldRefuseACommandWithoutOwnerAndCallNobody()
    {
        final CommandTable table = new CommandTable()
            .on(PolicyCommand.ChangeCase.TICK, CommandTable.Audience.POLICY_SET, this::record);

        final PolicyState.Outcome empty = table.apply(PolicyState.command("eve", T0).build());
        final PolicyState.Outcome unowned = table.apply(PolicyState.command("eve", T0)
            .setRegionShares(RegionShares.getDefaultInstance()).build());

        assertEquals(PolicyState.Status.INVALID, empty.status());
        assertEquals("empty policy command", empty.error().getError());
        assertEquals(PolicyState.Status.INVALID, unowned.status());
        assertTrue(seen.isEmpty());
        assertFalse(table.handles(PolicyCommand.ChangeCase.REGION_SHARES));
    }

    @Test
    void shouldRejectASecondOwnerForOneTypeAndAnOwnerForTheEmptyCommand()
    {
        final CommandTable table = new CommandTable()
            .on(PolicyCommand.ChangeCase.TICK, CommandTable.Audience.POLICY_SET, this::record);

        assertThrows(IllegalArgumentException.class,
            () -> table.on(PolicyCommand.ChangeCase.TICK, CommandTable.Audience.POLICY_SET, this::record));
        assertThrows(IllegalArgumentException.class,
            () -> table.on(PolicyCommand.ChangeCase.CHANGE_NOT_SET, CommandTable.Audience.POLICY_SET, this::record));
    }

    @Test
    void shouldGiveEveryCommandTypeAnOwnerInTheStateMachineAndRefuseAnEmptyCommand()
    {
        final PolicyState state = new PolicyState();
        for (final PolicyCommand.ChangeCase type : PolicyCommand.ChangeCase.values())
        {
            assertEquals(type != PolicyCommand.ChangeCase.CHANGE_NOT_SET, state.handles(type), type.name());
        }
        final PolicyState.Outcome refused = state.apply(PolicyState.command("eve", T0).build());
        assertEquals(PolicyState.Status.INVALID, refused.status());
        assertEquals("empty policy command", refused.error().getError());
        assertEquals(0, state.audit(r -> true, 10).size(), "a refused command records nothing");
    }
}
