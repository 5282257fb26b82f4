package dev.limiter.server.control;

import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.policy.AuditRecord;
import dev.limiter.protocol.policy.DeleteCommand;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.RollbackCommand;
import dev.limiter.protocol.policy.Selector;
import dev.limiter.server.control.PolicyState.Outcome;
import dev.limiter.server.control.PolicyState.Status;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The policy commands against a catalogue of their own, applied as the log applies them (the log's
 * clock first): each refusal says what was wrong and leaves the catalogue as it was.
 */
class PolicyCommandsTest
{
    private static final long T0 = 1_796_000_000_000L;

    private final LogClock clock = new LogClock();
    private final AuditTrail audit = new AuditTrail();
    private final PolicyCatalogue catalogue = new PolicyCatalogue(audit, clock, new VersionRates(1), false);
    private final PolicyCommands commands = new PolicyCommands(catalogue, clock);
    private long at = T0;

    private Outcome apply(final Function<PolicyCommand, Outcome> handler, final PolicyCommand.Builder command)
    {
        final PolicyCommand built = command.build();
        clock.advance(built);
        return handler.apply(built);
    }

    private static PolicySet.Builder file(final Policy.Builder... policies)
    {
        final PolicySet.Builder file = PolicySet.newBuilder().setVersion(3)
            .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(2).setOwner("infra"));
        for (final Policy.Builder policy : policies)
        {
            file.addPolicies(policy);
        }
        return file;
    }

    private static Policy.Builder orders(final long rate)
    {
        return Policy.newBuilder().setId("orders").setSelector(Selector.newBuilder().setRoute("/orders"))
            .setRate(rate).setBurst(rate).setOwner("team-orders").setReason("launch");
    }

    private Outcome put(final Policy.Builder policy, final long expectedVersion)
    {
        return apply(commands::put,
            PolicyState.command("alice", at++).setPut(policy).setExpectedVersion(expectedVersion));
    }

    private Outcome rollback(final String id, final long toVersion, final String reason)
    {
        return apply(commands::rollback, PolicyState.command("alice", at++)
            .setRollback(RollbackCommand.newBuilder().setId(id).setToVersion(toVersion).setReason(reason)));
    }

    private Outcome delete(final String id, final String reason)
    {
        return apply(commands::delete, PolicyState.command("alice", at++)
            .setDelete(DeleteCommand.newBuilder().setId(id).setReason(reason)));
    }

    private List<String> actions()
    {
        return audit.matching(r -> true, 100).stream().map(AuditRecord::getAction).toList();
    }

    /** The refusal's status and message, and that the catalogue is as it was. */
    private void assertRefused(final Status status, final String message, final Outcome outcome, final long setVersion)
    {
        assertEquals(status, outcome.status(), String.valueOf(outcome.error()));
        assertTrue(outcome.error().getError().contains(message), outcome.error().getError());
        assertEquals(setVersion, catalogue.setVersion(), "nothing changed");
    }

    @BeforeEach
    void seed()
    {
        final Outcome seeded = apply(commands::bootstrap, PolicyState.command("n1", at++).setBootstrap(file()));
        assertEquals(Status.OK, seeded.status());
    }

    @Test
    void aPolicyFileThatDoesNotCompileSeedsNothingAndAnotherFileIsIgnoredOnceSeeded()
    {
        final LogClock fresh = new LogClock();
        final PolicyCatalogue empty = new PolicyCatalogue(new AuditTrail(), fresh, new VersionRates(1), false);
        final Outcome invalid = new PolicyCommands(empty, fresh).bootstrap(PolicyState.command("n1", T0)
            .setBootstrap(file(orders(5), orders(6))).build());
        assertEquals(Status.INVALID, invalid.status());
        assertEquals("the policy file is invalid", invalid.error().getError());
        assertTrue(invalid.error().getErrorsList().stream().anyMatch(e -> e.contains("duplicate id 'orders'")),
            invalid.error().getErrorsList().toString());
        assertFalse(empty.bootstrapped());

        final Outcome again = apply(commands::bootstrap, PolicyState.command("n2", at++).setBootstrap(file(orders(5))));
        assertEquals(Status.IGNORED, again.status());
        assertEquals(3, again.result().getSetVersion());
        assertNull(catalogue.versions("orders"));
    }

    @Test
    void aPutNamingAVersionThatIsNotTheNewestConflicts()
    {
        assertEquals(Status.OK, put(orders(10), 0).status());
        assertRefused(Status.CONFLICT, "policy orders is at version 1, not 5: it changed since you read it",
            put(orders(20), 5), 4);
        assertEquals(Status.OK, put(orders(20), 1).status());
        assertEquals(2, catalogue.versions("orders").size());
    }

    @Test
    void aPutThatSaysExactlyWhatIsInForceIsRefused()
    {
        put(orders(10), 0);
        assertRefused(Status.INVALID, "policy orders version 1 already says exactly this; nothing changed",
            put(orders(10), 0), 4);
    }

    @Test
    void aPutWithoutAReasonOrScheduledTooFarAheadNamesEachBadField()
    {
        final Outcome refused = put(orders(10).clearReason()
            .setEffectiveFrom(Timestamps.fromMillis(at + 367L * 24 * 3600 * 1000)), 0);
        assertRefused(Status.INVALID, "policy orders is invalid; nothing changed", refused, 3);
        assertEquals(List.of("policy.reason: required (why this version exists)",
            "policy.effectiveFrom: at most 366 days ahead"), refused.error().getErrorsList());
        assertNull(catalogue.versions("orders"));
    }

    @Test
    void aPolicyDeletedAndPutAgainIsCreatedAgainUnderTheNextVersion()
    {
        put(orders(10), 0);
        assertEquals(Status.OK, delete("orders", "retired").status());
        final Outcome again = put(orders(10), 0);
        assertEquals(Status.OK, again.status());
        assertEquals(3, again.result().getVersion().getPolicy().getVersion());
        assertEquals(List.of("POLICIES_BOOTSTRAPPED", "POLICY_CREATED", "POLICY_DELETED", "POLICY_CREATED"), actions());
    }

    @Test
    void aRollbackSaysWhatIsWrongWithItsTarget()
    {
        assertRefused(Status.NOT_FOUND, "no policy search", rollback("search", 1, "oops"), 3);
        put(orders(10), 0);
        delete("orders", "retired");
        final Outcome refused = rollback("orders", 9, " ");
        assertRefused(Status.INVALID, "cannot roll back orders; nothing changed", refused, 5);
        assertEquals(List.of("reason: required (why roll back)", "toVersion: 9 is not a version of orders (1..2)"),
            refused.error().getErrorsList());
        assertEquals(List.of("toVersion: version 2 is a deletion; roll back to a version before it"),
            rollback("orders", 2, "oops").error().getErrorsList());
    }

    @Test
    void aRollbackToAVersionBeforeADeletionReCreatesThePolicyAtOnce()
    {
        put(orders(10), 0);
        delete("orders", "retired");
        final Outcome restored = rollback("orders", 1, "still needed");
        assertEquals(Status.OK, restored.status());
        assertEquals(3, restored.result().getVersion().getPolicy().getVersion());
        assertEquals(1, restored.result().getVersion().getRolledBackFrom());
        assertEquals("still needed", restored.result().getVersion().getPolicy().getReason());
        final AuditRecord record = audit.matching(r -> r.getAction().equals("POLICY_ROLLED_BACK"), 1).get(0);
        assertEquals("to version 1 (re-creates the deleted policy)", record.getDetail());
    }

    @Test
    void aDeleteNeedsAPolicyInForceThatIsNotTheDefaultAndAReason()
    {
        assertRefused(Status.NOT_FOUND, "no policy orders in force", delete("orders", "gone"), 3);
        assertRefused(Status.INVALID, "the default policy cannot be deleted", delete("baseline", "gone"), 3);
        put(orders(10), 0);
        final Outcome refused = delete("orders", "");
        assertRefused(Status.INVALID, "cannot delete orders; nothing changed", refused, 4);
        assertEquals(List.of("reason: required (why delete it)"), refused.error().getErrorsList());
        assertEquals(1, catalogue.versions("orders").size());
    }
}
