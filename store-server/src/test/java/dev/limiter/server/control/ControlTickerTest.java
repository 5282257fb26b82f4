package dev.limiter.server.control;

import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.policy.Exemption;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.Selector;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** When the control plane's clock logs a TICK, driven by a wall clock the test sets. */
class ControlTickerTest
{
    private static final long T0 = 1_796_000_000_000L;

    private final PolicyState state = new PolicyState(1);
    private final AtomicLong now = new AtomicLong(T0);
    private final AtomicBoolean decides = new AtomicBoolean(true);
    private final ControlTicker ticker =
        new ControlTicker(state, new PolicyControl(state, null, 1), decides::get, now::get, "n1");

    @BeforeEach
    void seed()
    {
        apply(PolicyState.command("n1", T0).setBootstrap(PolicySet.newBuilder().setVersion(1)));
    }

    private void apply(final PolicyCommand.Builder command)
    {
        assertEquals(PolicyState.Status.OK, state.apply(command.build()).status());
    }

    private void exempt(final String id, final long expiresAt)
    {
        apply(PolicyState.command("carol", now.get()).setExempt(Exemption.newBuilder().setId(id).setTenant("acme")
            .setOwner("sales").setReason("load test").setExpiresAt(Timestamps.fromMillis(expiresAt))));
    }

    @Test
    void nothingIsLoggedWhileNothingIsDue() throws Exception
    {
        assertFalse(ticker.tick(), "no exemption, no scheduled version");
        exempt("e1", T0 + 60_000);
        now.addAndGet(59_999);
        assertFalse(ticker.tick(), "the exemption has a millisecond left and nothing was bypassed");
        assertEquals(1, state.exemptions().size());
    }

    @Test
    void anExemptionIsExpiredByTheFirstTickAtItsExpiry() throws Exception
    {
        exempt("e1", T0 + 60_000);
        now.addAndGet(60_000);
        assertTrue(ticker.tick());
        assertTrue(state.exemptions().isEmpty(), "expired through the log");
        assertFalse(ticker.tick(), "and only once");
    }

    @Test
    void aScheduledVersionComesIntoForceAtItsTime() throws Exception
    {
        final Policy orders = Policy.newBuilder().setId("orders")
            .setSelector(Selector.newBuilder().setRoute("/v1/orders")).setRate(10).setBurst(10).setOwner("team")
            .setReason("launch").build();
        apply(PolicyState.command("alice", now.get()).setPut(orders));
        apply(PolicyState.command("alice", now.get()).setPut(orders.toBuilder().setRate(50).setBurst(50)
            .setEffectiveFrom(Timestamps.fromMillis(T0 + 5_000))));
        assertEquals(1, state.current("orders").getVersion(), "not before its time");
        assertFalse(ticker.tick());
        now.addAndGet(5_000);
        assertTrue(ticker.tick(), "due");
        assertEquals(2, state.current("orders").getVersion(), "in force");
    }

    @Test
    void aNodeThatDoesNotDecideForTheControlGroupNeverTicks() throws Exception
    {
        exempt("e1", T0 + 1_000);
        now.addAndGet(1_000);
        decides.set(false);
        assertFalse(ticker.tick());
        assertEquals(1, state.exemptions().size(), "left to the leader");
        decides.set(true);
        assertTrue(ticker.tick());
    }
}
