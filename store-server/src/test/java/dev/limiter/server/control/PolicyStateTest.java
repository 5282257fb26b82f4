package dev.limiter.server.control;

import com.google.protobuf.util.JsonFormat;
import dev.limiter.protocol.policy.AuditRecord;
import dev.limiter.protocol.policy.DeleteCommand;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.RollbackCommand;
import dev.limiter.protocol.policy.Selector;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PolicyStateTest
{
    private static final long T0 = 1_796_000_000_000L; // wall-clock millis, 2026-11

    private final PolicyState state = new PolicyState();

    private static Policy orders(final long rate)
    {
        return Policy.newBuilder().setId("orders").setSelector(Selector.newBuilder().setRoute("/v1/orders/{id}"))
            .setRate(rate).setBurst(rate).setOwner("team-orders").setReason("launch").build();
    }

    private static PolicyCommand put(final Policy policy, final long at)
    {
        return PolicyState.command("alice", at).setPut(policy).build();
    }

    @BeforeEach
    void seed() throws Exception
    {
        final PolicySet.Builder file = PolicySet.newBuilder();
        JsonFormat.parser().merge("{\"version\":4,\"policies\":[{\"id\":\"hot\",\"selector\":{\"route\":\"/hot\"},\"rate\":100," +
            "\"scope\":\"GLOBAL\",\"owner\":\"infra\"}],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":2,\"owner\":\"infra\"}}", file);
        assertEquals(PolicyState.Status.OK, state.apply(PolicyState.command("n1", T0).setBootstrap(file).build()).status());
    }

    @Test
    void aSeedIsAppliedOnceAndLaterSeedsAreIgnored()
    {
        assertTrue(state.bootstrapped());
        assertEquals(4, state.setVersion());
        assertEquals(2, state.index().size());
        final PolicyState.Outcome again = state.apply(PolicyState.command("n2", T0 + 1).setBootstrap(PolicySet.getDefaultInstance()).build());
        assertEquals(PolicyState.Status.IGNORED, again.status());
        assertEquals(2, state.index().size(), "the second seed changed nothing");
    }

    @Test
    void everyChangeMakesANewImmutableVersionAndKeepsTheOrdinal()
    {
        final PolicyState.Outcome created = state.apply(put(orders(10), T0 + 1000));
        assertEquals(PolicyState.Status.OK, created.status());
        assertEquals(1, created.result().getVersion().getPolicy().getVersion());
        assertEquals(5, created.result().getSetVersion());
        final int ordinal = state.index().policies().stream().filter(p -> p.id().equals("orders")).findFirst().orElseThrow().ordinal();

        final PolicyState.Outcome updated = state.apply(put(orders(20), T0 + 2000));
        assertEquals(2, updated.result().getVersion().getPolicy().getVersion());
        assertEquals(20, state.current("orders").getRate());
        assertEquals(ordinal, state.index().policies().stream().filter(p -> p.id().equals("orders")).findFirst().orElseThrow().ordinal());
        assertEquals(2, state.index().policies().stream().filter(p -> p.id().equals("orders")).findFirst().orElseThrow().version());
        // The old version stays readable for decisions made under it.
        assertEquals(10, state.rate(ordinal, 1, 0).burstTokens());
        assertEquals(20, state.rate(ordinal, 2, 0).burstTokens());
        assertThrows(IllegalStateException.class, () -> state.rate(ordinal, 3, 0));
        assertEquals(List.of(10L, 20L), state.history("orders").getVersionsList().stream().map(v -> v.getPolicy().getRate()).toList());
        assertEquals("alice", state.history("orders").getVersions(1).getActor());
    }

    @Test
    void anInvalidChangeChangesNothingAndNamesEveryBadField()
    {
        final long before = state.setVersion();
        final PolicyState.Outcome invalid = state.apply(put(orders(10).toBuilder().setRate(0).setOwner("").setReason("").build(), T0));
        assertEquals(PolicyState.Status.INVALID, invalid.status());
        final List<String> errors = invalid.error().getErrorsList();
        assertTrue(errors.stream().anyMatch(e -> e.startsWith("policy.rate:")), errors.toString());
        assertTrue(errors.stream().anyMatch(e -> e.startsWith("policy.owner:")), errors.toString());
        assertTrue(errors.stream().anyMatch(e -> e.startsWith("policy.reason:")), errors.toString());
        assertEquals(before, state.setVersion());
        assertNull(state.history("orders"));
        assertEquals(1, state.audit(r -> true, 100).size(), "only the seed is audited");
    }

    @Test
    void aChangeConflictingWithAnotherPolicysSelectorIsRefused()
    {
        state.apply(put(orders(10), T0));
        final PolicyState.Outcome conflict = state.apply(put(orders(10).toBuilder().setId("orders-copy").build(), T0));
        assertEquals(PolicyState.Status.INVALID, conflict.status());
        assertTrue(conflict.error().getErrorsList().stream().anyMatch(e -> e.contains("conflicts with policy 'orders'")),
            conflict.error().toString());
        assertNull(state.current("orders-copy"));
    }

    @Test
    void rollbackMakesANewVersionEqualToTheChosenOneAndIsAudited()
    {
        state.apply(put(orders(10), T0));
        state.apply(put(orders(1), T0 + 1000));
        final PolicyState.Outcome rolledBack = state.apply(PolicyState.command("bob", T0 + 2000)
            .setRollback(RollbackCommand.newBuilder().setId("orders").setToVersion(1).setReason("v2 starved checkout")).build());
        assertEquals(PolicyState.Status.OK, rolledBack.status());
        final Policy current = state.current("orders");
        assertEquals(3, current.getVersion());
        assertEquals(10, current.getRate());
        assertEquals(1, state.history("orders").getVersions(2).getRolledBackFrom());
        final AuditRecord last = state.audit(r -> r.getPolicyId().equals("orders"), 10).get(2);
        assertEquals("POLICY_ROLLED_BACK", last.getAction());
        assertEquals("bob", last.getActor());
        assertEquals("v2 starved checkout", last.getReason());
        assertTrue(last.getDetail().contains("rate 1 -> 10"), last.getDetail());

        assertEquals(PolicyState.Status.INVALID, state.apply(PolicyState.command("bob", T0)
            .setRollback(RollbackCommand.newBuilder().setId("orders").setToVersion(9).setReason("x")).build()).status());
        assertEquals(PolicyState.Status.NOT_FOUND, state.apply(PolicyState.command("bob", T0)
            .setRollback(RollbackCommand.newBuilder().setId("nope").setToVersion(1).setReason("x")).build()).status());
        assertEquals(PolicyState.Status.INVALID, state.apply(PolicyState.command("bob", T0)
            .setRollback(RollbackCommand.newBuilder().setId("orders").setToVersion(1)).build()).status(), "a reason is required");
    }

    @Test
    void deletionIsATombstoneVersionAndTheDefaultCannotBeDeleted()
    {
        state.apply(put(orders(10), T0));
        assertEquals(PolicyState.Status.INVALID, state.apply(PolicyState.command("bob", T0)
            .setDelete(DeleteCommand.newBuilder().setId("orders")).build()).status(), "a reason is required");
        assertEquals(PolicyState.Status.OK, state.apply(PolicyState.command("bob", T0)
            .setDelete(DeleteCommand.newBuilder().setId("orders").setReason("route retired")).build()).status());
        assertNull(state.current("orders"));
        assertTrue(state.history("orders").getVersions(1).getDeleted());
        assertFalse(state.index().policies().stream().anyMatch(p -> p.id().equals("orders")));
        assertEquals(PolicyState.Status.INVALID, state.apply(PolicyState.command("bob", T0)
            .setDelete(DeleteCommand.newBuilder().setId("baseline").setReason("x")).build()).status());
        // Roll back past the deletion: the policy is in force again, as version 3, with its old ordinal.
        assertEquals(PolicyState.Status.OK, state.apply(PolicyState.command("bob", T0)
            .setRollback(RollbackCommand.newBuilder().setId("orders").setToVersion(1).setReason("needed after all")).build()).status());
        assertEquals(3, state.current("orders").getVersion());
    }

    @Test
    void checkAnswersLikeApplyButChangesNothing()
    {
        final PolicyState.Outcome checked = state.check(put(orders(10), T0));
        assertEquals(PolicyState.Status.OK, checked.status());
        assertNull(state.current("orders"));
        assertEquals(1, state.audit(r -> true, 10).size());
        assertEquals(PolicyState.Status.OK, state.apply(put(orders(10), T0)).status());
        assertEquals(1, state.current("orders").getVersion());
    }

    @Test
    void checkOnAFullAuditTrailEvictsNothingAndLeavesTheStateExactlyAsItWas()
    {
        // Membership changes are audit records and nothing else: a cheap way to fill the trail.
        final dev.limiter.protocol.policy.Member n1 = dev.limiter.protocol.policy.Member.newBuilder().setId("n1").setAddress("h:1").build();
        for (int i = 0; i < PolicyState.MAX_AUDIT_RECORDS; i++)
        {
            final PolicyCommand change = PolicyState.command("ops", T0).setMembers(dev.limiter.protocol.policy.MembersChange.newBuilder()
                .addBefore(n1).addAfter(n1).setReason("r" + i)).build();
            assertEquals(PolicyState.Status.OK, state.apply(change).status());
        }
        final var before = state.snapshot();
        assertEquals(PolicyState.MAX_AUDIT_RECORDS, before.getAuditCount());

        assertEquals(PolicyState.Status.OK, state.check(put(orders(10), T0)).status());
        assertEquals(PolicyState.Status.INVALID, state.check(put(orders(0), T0)).status());
        assertEquals(before, state.snapshot(), "nothing changed, the oldest record included");

        assertEquals(PolicyState.Status.OK, state.apply(put(orders(10), T0)).status());
        final var after = state.snapshot();
        assertEquals(PolicyState.MAX_AUDIT_RECORDS, after.getAuditCount(), "the trail keeps its size");
        assertEquals(before.getAudit(1), after.getAudit(0), "the oldest record made room");
        assertEquals(before.getAudit(PolicyState.MAX_AUDIT_RECORDS - 1).getSequence() + 1,
            after.getAudit(PolicyState.MAX_AUDIT_RECORDS - 1).getSequence(), "sequences go on where the trail was, not where the check left it");
    }

    @Test
    void aDegradedWindowSentTwiceIsRecordedOnce()
    {
        final com.google.protobuf.Timestamp start = PolicyState.command("x", T0).getAt();
        final com.google.protobuf.Timestamp end = PolicyState.command("x", T0 + 5000).getAt();
        final dev.limiter.protocol.policy.DegradedWindow window = dev.limiter.protocol.policy.DegradedWindow.newBuilder()
            .setClient("svc@host#1").setStart(start).setEnd(end).putDecisions("orders|OPEN|allowed", 12).build();
        final int before = state.audit(r -> true, 100).size();
        assertEquals(PolicyState.Status.OK, state.apply(PolicyState.command("sdk", T0 + 6000).setDegraded(window).build()).status());
        assertEquals(PolicyState.Status.OK, state.apply(PolicyState.command("sdk", T0 + 9000).setDegraded(window).build()).status(),
            "a re-sent window is taken (the SDK stops sending it)");
        assertEquals(before + 1, state.audit(r -> true, 100).size(), "and recorded once");
        assertEquals(PolicyState.Status.OK, state.apply(PolicyState.command("sdk", T0 + 9000)
            .setDegraded(window.toBuilder().setClient("svc@host#2")).build()).status());
        assertEquals(before + 2, state.audit(r -> true, 100).size(), "another SDK's window of the same time is its own");
    }

    @Test
    void aFloodOfSdkReportsNeverEvictsAPolicyRecordAndIsBoundedPerSdkAndInAll()
    {
        state.apply(put(orders(10), T0));
        final List<AuditRecord> policyRecords = state.audit(r -> !r.getAction().equals("SDK_DEGRADED_WINDOW"), 1000);
        // 300 made-up SDKs, 100 windows each: 30,000 reports, three times what the SDK trail holds.
        for (int i = 0; i < 30_000; i++)
        {
            final dev.limiter.protocol.policy.DegradedWindow window = dev.limiter.protocol.policy.DegradedWindow.newBuilder()
                .setClient("flood-" + (i % 300)).setStart(PolicyState.command("x", T0 + i).getAt())
                .setEnd(PolicyState.command("x", T0 + i + 1).getAt()).putDecisions("orders|OPEN|allowed", 1).build();
            assertEquals(PolicyState.Status.OK, state.apply(PolicyState.command("sdk", T0 + i).setDegraded(window).build()).status());
        }
        // One SDK alone cannot hold more than its share either.
        for (int i = 0; i < 500; i++)
        {
            state.apply(PolicyState.command("sdk", T0 + 40_000 + i).setDegraded(dev.limiter.protocol.policy.DegradedWindow.newBuilder()
                .setClient("loud").setStart(PolicyState.command("x", T0 + i).getAt()).setEnd(PolicyState.command("x", T0 + i).getAt())).build());
        }
        assertEquals(policyRecords, state.audit(r -> !r.getAction().equals("SDK_DEGRADED_WINDOW"), 1000),
            "every policy record survives the flood");
        assertEquals(SdkReportTrail.MAX_RECORDS, state.audit(r -> r.getAction().equals("SDK_DEGRADED_WINDOW"), 100_000).size());
        assertEquals(SdkReportTrail.MAX_PER_CLIENT, state.audit(r -> r.getPolicyId().equals("sdk:loud"), 100_000).size());
        assertEquals(PolicyState.Status.INVALID, state.apply(PolicyState.command("sdk", T0).setDegraded(
            dev.limiter.protocol.policy.DegradedWindow.newBuilder().setClient("x".repeat(PolicyState.MAX_SDK_CLIENT_LENGTH + 1))).build()).status());

        // The SDK trail travels in snapshots, and numbering goes on after it.
        final PolicyState replica = new PolicyState();
        replica.restore(state.snapshot());
        assertEquals(state.audit(r -> true, 100_000), replica.audit(r -> true, 100_000));
        state.apply(put(orders(20), T0 + 50_000));
        replica.apply(put(orders(20), T0 + 50_000));
        assertEquals(state.audit(r -> true, 1), replica.audit(r -> true, 1));
    }

    @Test
    void aSnapshotRestoresTheSameStateOnAnotherReplica()
    {
        state.apply(put(orders(10), T0));
        state.apply(put(orders(30), T0 + 5));
        final PolicyState replica = new PolicyState();
        replica.restore(state.snapshot());
        assertEquals(state.snapshot(), replica.snapshot());
        assertEquals(state.index().fingerprint(), replica.index().fingerprint());
        assertEquals(state.setVersion(), replica.setVersion());
        // Both continue identically.
        state.apply(put(orders(40), T0 + 9));
        replica.apply(put(orders(40), T0 + 9));
        assertEquals(state.snapshot(), replica.snapshot());
        assertNotNull(replica.current("orders"));
        replica.reset();
        assertFalse(replica.bootstrapped());
    }

    @Test
    void auditIsQueryableByPolicyAndKeepsTheNewestWhenLimited()
    {
        for (int rate = 1; rate <= 5; rate++)
        {
            state.apply(put(orders(rate), T0 + rate));
        }
        final List<AuditRecord> orders = state.audit(r -> r.getPolicyId().equals("orders"), 2);
        assertEquals(2, orders.size());
        assertEquals(5, orders.get(1).getVersion());
        assertEquals("POLICY_UPDATED", orders.get(1).getAction());
        assertTrue(orders.get(0).getSequence() < orders.get(1).getSequence());
    }

    private static dev.limiter.protocol.policy.Exemption.Builder exemption(final String id, final long expiresAtMillis)
    {
        return dev.limiter.protocol.policy.Exemption.newBuilder().setId(id).setTenant("acme").setRoute("/v1/orders/{id}")
            .setOwner("sales").setReason("load test").setExpiresAt(com.google.protobuf.util.Timestamps.fromMillis(expiresAtMillis));
    }

    private PolicyState.Outcome exempt(final dev.limiter.protocol.policy.Exemption.Builder exemption, final long at)
    {
        return state.apply(PolicyState.command("carol", at).setExempt(exemption).build());
    }

    private PolicyState.Outcome tick(final long at, final java.util.Map<String, Long> bypassed)
    {
        return state.apply(PolicyState.command("n1", at).setTick(dev.limiter.protocol.policy.Tick.newBuilder().putAllBypassed(bypassed)).build());
    }

    @Test
    void anExemptionNeedsASelectorAnOwnerAReasonAndAnExpiryAheadAndChangesNothingOtherwise()
    {
        final long hour = 3_600_000L;
        final java.util.Map<String, String> cases = new java.util.LinkedHashMap<>();
        cases.put("no selector", "at least one of tenant");
        cases.put("principal without tenant", "exemption.principal: needs the tenant");
        cases.put("no owner", "exemption.owner: required");
        cases.put("no reason", "exemption.reason: required");
        cases.put("expired", "exemption.expiresAt: required, and in the future");
        cases.put("too long", "at most 90 days");
        cases.put("bad route", "exemption.selector.route");
        cases.put("bad id", "exemption.id");
        for (final java.util.Map.Entry<String, String> c : cases.entrySet())
        {
            final dev.limiter.protocol.policy.Exemption.Builder e = exemption("e1", T0 + hour);
            switch (c.getKey())
            {
                case "no selector" -> e.clearTenant().clearRoute();
                case "principal without tenant" -> e.clearTenant().setPrincipal("bob");
                case "no owner" -> e.clearOwner();
                case "no reason" -> e.clearReason();
                case "expired" -> e.setExpiresAt(com.google.protobuf.util.Timestamps.fromMillis(T0 - 1));
                case "too long" -> e.setExpiresAt(com.google.protobuf.util.Timestamps.fromMillis(T0 + 91 * 24 * hour));
                case "bad route" -> e.setRoute("no-slash");
                case "bad id" -> e.setId("Not Valid");
                default -> throw new IllegalStateException();
            }
            final PolicyState.Outcome outcome = exempt(e, T0);
            assertEquals(PolicyState.Status.INVALID, outcome.status(), c.getKey());
            assertTrue(outcome.error().getErrorsList().stream().anyMatch(m -> m.contains(c.getValue())),
                c.getKey() + ": " + outcome.error().getErrorsList());
        }
        assertTrue(state.exemptions().isEmpty());
        assertTrue(state.activeExemptions().isEmpty());
        assertEquals(PolicyState.Status.OK, exempt(exemption("e1", T0 + hour), T0).status());
        assertEquals(PolicyState.Status.INVALID, exempt(exemption("e1", T0 + hour), T0).status(), "the id is active");
        final PolicyState.Outcome same = exempt(exemption("e2", T0 + hour), T0);
        assertTrue(same.error().getErrorsList().stream().anyMatch(m -> m.contains("'e1' already covers exactly these requests")),
            same.error().toString());
    }

    @Test
    void aTickExpiresExemptionsByItsOwnTimeAndRecordsBypasses()
    {
        exempt(exemption("e1", T0 + 10_000), T0);
        assertFalse(state.activeExemptions().isEmpty());
        assertEquals(PolicyState.Status.IGNORED, tick(T0 + 5_000, java.util.Map.of()).status(), "not yet due");
        assertEquals(PolicyState.Status.OK, tick(T0 + 6_000, java.util.Map.of("e1", 42L, "gone", 7L)).status());
        assertEquals(42, state.exemptions().get(0).getBypassed());
        assertEquals(PolicyState.Status.OK, tick(T0 + 10_000, java.util.Map.of("e1", 8L)).status());
        assertTrue(state.exemptions().isEmpty());
        assertTrue(state.activeExemptions().isEmpty());
        final List<String> actions = state.audit(r -> r.getPolicyId().equals("exemption:e1"), 10).stream().map(AuditRecord::getAction).toList();
        assertEquals(List.of("EXEMPTION_CREATED", "EXEMPTION_USED", "EXEMPTION_USED", "EXEMPTION_EXPIRED"), actions);
        assertTrue(state.audit(r -> r.getAction().equals("EXEMPTION_EXPIRED"), 1).get(0).getDetail().contains("50 decisions bypassed in all"));
    }

    @Test
    void anExemptionCanBeRemovedEarlyWithAReasonAndTravelsInSnapshots()
    {
        exempt(exemption("e1", T0 + 10_000), T0);
        final PolicyState replica = new PolicyState();
        replica.restore(state.snapshot());
        assertEquals(state.exemptions(), replica.exemptions());
        assertFalse(replica.activeExemptions().isEmpty());
        assertEquals(PolicyState.Status.INVALID, state.apply(PolicyState.command("carol", T0 + 1)
            .setUnexempt(dev.limiter.protocol.policy.RemoveExemption.newBuilder().setId("e1")).build()).status());
        assertEquals(PolicyState.Status.NOT_FOUND, state.apply(PolicyState.command("carol", T0 + 1)
            .setUnexempt(dev.limiter.protocol.policy.RemoveExemption.newBuilder().setId("nope").setReason("x")).build()).status());
        assertEquals(PolicyState.Status.OK, state.apply(PolicyState.command("carol", T0 + 1)
            .setUnexempt(dev.limiter.protocol.policy.RemoveExemption.newBuilder().setId("e1").setReason("test over")).build()).status());
        assertTrue(state.activeExemptions().isEmpty());
        assertEquals("EXEMPTION_REMOVED", state.audit(r -> true, 1).get(0).getAction());
    }

    @Test
    void aShadowVersionRunsBesideTheEnforcedOneUntilAnEnforcedVersionFollowsIt()
    {
        state.apply(put(orders(10), T0));
        final Policy shadow = orders(3).toBuilder().setMode(dev.limiter.protocol.policy.Mode.SHADOW).build();
        assertEquals(PolicyState.Status.OK, state.apply(put(shadow, T0 + 1)).status());
        assertEquals(1, state.current("orders").getVersion(), "the enforced version stays in force");
        assertTrue(state.index().hasShadow());
        final long enforcedOrdinal = state.index().policies().stream().filter(p -> p.id().equals("orders") && !p.shadow()).findFirst().orElseThrow().ordinal();
        final long shadowOrdinal = state.index().policies().stream().filter(p -> p.id().equals("orders") && p.shadow()).findFirst().orElseThrow().ordinal();
        assertTrue(enforcedOrdinal != shadowOrdinal, "a shadow spends its own buckets");
        assertEquals(3, state.rate((int)shadowOrdinal, 2, 0).burstTokens());
        assertEquals(3, state.latestRate((int)shadowOrdinal).burstTokens());
        assertEquals(10, state.latestRate((int)enforcedOrdinal).burstTokens());

        final PolicyState replica = new PolicyState();
        replica.restore(state.snapshot());
        assertEquals(state.index().fingerprint(), replica.index().fingerprint(), "ordinals per mode survive a snapshot");

        assertEquals(PolicyState.Status.OK, state.apply(put(orders(3), T0 + 2)).status());
        assertEquals(3, state.current("orders").getVersion());
        assertFalse(state.index().hasShadow(), "an enforced version ends the shadow");
        assertEquals(PolicyState.Status.INVALID, state.apply(put(Policy.newBuilder().setId("baseline").setRate(1).setOwner("o")
            .setReason("r").setMode(dev.limiter.protocol.policy.Mode.SHADOW).build(), T0)).status(), "the default cannot be shadowed");
    }

    @Test
    void aScheduledVersionTakesEffectWhenTheClusterClockReachesItsTime()
    {
        state.apply(put(orders(10), T0));
        final Policy later = orders(50).toBuilder().setEffectiveFrom(com.google.protobuf.util.Timestamps.fromMillis(T0 + 60_000)).build();
        final PolicyState.Outcome scheduled = state.apply(put(later, T0 + 1000));
        assertEquals(PolicyState.Status.OK, scheduled.status());
        assertEquals(2, scheduled.result().getVersion().getPolicy().getVersion());
        assertEquals(1, state.current("orders").getVersion(), "not before its time");
        assertFalse(state.scheduledDue(T0 + 59_999));
        assertTrue(state.scheduledDue(T0 + 60_000), "the leader ticks once it is due");
        assertEquals(PolicyState.Status.IGNORED, tick(T0 + 30_000, java.util.Map.of()).status());
        assertEquals(1, state.current("orders").getVersion());

        assertEquals(PolicyState.Status.OK, tick(T0 + 60_000, java.util.Map.of()).status());
        assertEquals(2, state.current("orders").getVersion());
        assertEquals(50, state.index().policies().stream().filter(p -> p.id().equals("orders")).findFirst().orElseThrow().limit().burstTokens());
        assertEquals("POLICY_IN_FORCE", state.audit(r -> true, 1).get(0).getAction());
        assertFalse(state.scheduledDue(T0 + 120_000), "taken effect once");

        // A time already passed means now; more than 366 days ahead is refused.
        final Policy past = orders(70).toBuilder().setEffectiveFrom(com.google.protobuf.util.Timestamps.fromMillis(T0)).build();
        state.apply(put(past, T0 + 61_000));
        assertEquals(3, state.current("orders").getVersion());
        final Policy far = orders(80).toBuilder().setEffectiveFrom(com.google.protobuf.util.Timestamps.fromMillis(T0 + 400L * 86_400_000)).build();
        assertEquals(PolicyState.Status.INVALID, state.apply(put(far, T0 + 62_000)).status());
    }

    @Test
    void aScheduledVersionThatWouldConflictWhenItsTimeComesIsBlockedNotApplied()
    {
        // Scheduled: orders moves to /v2/orders at T0+60s. Meanwhile another policy takes /v2/orders now.
        state.apply(put(orders(10), T0));
        final Policy moved = orders(10).toBuilder().setSelector(Selector.newBuilder().setRoute("/v2/orders/{id}"))
            .setEffectiveFrom(com.google.protobuf.util.Timestamps.fromMillis(T0 + 60_000)).build();
        assertEquals(PolicyState.Status.OK, state.apply(put(moved, T0 + 1)).status());
        final Policy other = orders(5).toBuilder().setId("orders-v2").setSelector(Selector.newBuilder().setRoute("/v2/orders/{id}")).build();
        assertEquals(PolicyState.Status.INVALID, state.apply(put(other, T0 + 2)).status(),
            "refused now: it would conflict once the scheduled version takes effect");
        assertEquals(PolicyState.Status.OK, tick(T0 + 60_000, java.util.Map.of()).status());
        assertEquals("/v2/orders/{id}", state.current("orders").getSelector().getRoute());

        // B holds /v3 now and moves away at T0+200s; A is scheduled onto /v3 at T0+100s: fine now and
        // once both have moved, but at T0+100s both would select /v3. A is blocked, not applied.
        final Policy b = orders(5).toBuilder().setId("b").setSelector(Selector.newBuilder().setRoute("/v3/x")).build();
        assertEquals(PolicyState.Status.OK, state.apply(put(b, T0 + 70_000)).status());
        assertEquals(PolicyState.Status.OK, state.apply(put(b.toBuilder().setSelector(Selector.newBuilder().setRoute("/v4/x"))
            .setEffectiveFrom(com.google.protobuf.util.Timestamps.fromMillis(T0 + 200_000)).build(), T0 + 70_001)).status());
        final Policy a = orders(5).toBuilder().setId("a").setSelector(Selector.newBuilder().setRoute("/v3/x"))
            .setEffectiveFrom(com.google.protobuf.util.Timestamps.fromMillis(T0 + 100_000)).build();
        assertEquals(PolicyState.Status.OK, state.apply(put(a, T0 + 70_002)).status());
        assertEquals(PolicyState.Status.OK, tick(T0 + 100_000, java.util.Map.of()).status());
        assertNull(state.current("a"), "blocked: it would have conflicted with b at that moment");
        assertTrue(state.history("a").getVersions(0).getBlocked());
        assertEquals("POLICY_SCHEDULE_BLOCKED", state.audit(r -> true, 1).get(0).getAction());
        assertEquals(PolicyState.Status.OK, tick(T0 + 200_000, java.util.Map.of()).status());
        assertEquals("/v4/x", state.current("b").getSelector().getRoute());
        assertNull(state.current("a"), "a blocked version never takes effect");
    }

    @Test
    void aRolloutNeedsAnEnforcedVersionAndKeepsTheOthersOnTheOneBeforeItAcrossSteps()
    {
        final dev.limiter.protocol.policy.Rollout tenPercent = dev.limiter.protocol.policy.Rollout.newBuilder().setPercent(10).build();
        final PolicyState.Outcome tooEarly = state.apply(put(orders(5).toBuilder().setRollout(tenPercent).build(), T0));
        assertEquals(PolicyState.Status.INVALID, tooEarly.status());
        assertTrue(tooEarly.error().getErrorsList().get(0).contains("needs a version of this policy in force"), tooEarly.error().toString());

        state.apply(put(orders(10), T0));
        assertEquals(PolicyState.Status.OK, state.apply(put(orders(5).toBuilder().setRollout(tenPercent).build(), T0 + 1)).status());
        assertEquals(PolicyState.Status.OK, state.apply(put(orders(5).toBuilder().setRollout(tenPercent.toBuilder().setPercent(50)).build(), T0 + 2)).status());
        final Policy step = state.current("orders");
        assertEquals(3, step.getVersion());
        assertEquals(1, step.getRollout().getFallback().getVersion(), "the others stay on the version before the rollout, not on the previous step");
        assertEquals(50, state.index().policies().stream().filter(p -> p.id().equals("orders")).findFirst().orElseThrow().rolloutPercent());
        assertEquals("POLICY_ROLLOUT", state.audit(r -> true, 1).get(0).getAction());

        final PolicyState.Outcome percent = state.apply(put(orders(5).toBuilder().setRollout(tenPercent.toBuilder().setPercent(101)).build(), T0 + 3));
        assertTrue(percent.error().getErrorsList().stream().anyMatch(e -> e.contains("rollout.percent")), percent.error().toString());
        final PolicyState.Outcome shadowed = state.apply(put(orders(5).toBuilder().setMode(dev.limiter.protocol.policy.Mode.SHADOW)
            .setRollout(tenPercent).build(), T0 + 3));
        assertEquals(PolicyState.Status.INVALID, shadowed.status());
        assertEquals(3, state.current("orders").getVersion(), "nothing changed");
    }

    @Test
    void aDecisionWaitingForAPolicyVersionStopsWaitingWhenTheNodeStops() throws Exception
    {
        final PolicyState state = new PolicyState(1);
        final CompletableFuture<Throwable> ended = new CompletableFuture<>();
        final Thread apply = new Thread(() ->
        {
            try
            {
                state.awaitRate(3, 7, 0, 0); // a version the control group has not brought yet
                ended.complete(null);
            }
            catch (final RuntimeException e)
            {
                ended.complete(e);
            }
        }, "apply");
        apply.start();
        final long until = System.nanoTime() + 5_000_000_000L;
        while (apply.getState() != Thread.State.TIMED_WAITING && System.nanoTime() < until)
        {
            Thread.onSpinWait();
        }
        assertFalse(ended.isDone(), "still waiting for the version");
        state.stopWaiting();
        final Throwable stopped = ended.get(5, TimeUnit.SECONDS);
        assertTrue(stopped instanceof IllegalStateException && stopped.getMessage().contains("stopping"), String.valueOf(stopped));
        assertThrows(IllegalStateException.class, () -> state.awaitRate(3, 7, 0, 0), "after the stop, a wait ends at once");
    }
}
