package dev.limiter.server.engine;

import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.ReasonCode;
import dev.limiter.protocol.ReleaseCodec;
import dev.limiter.protocol.ResultCodec;
import dev.limiter.server.testing.EmbeddedDataPlane;
import dev.limiter.server.testing.ManualClock;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A shard's deciders, one kind of entry at a time, on an {@link EmbeddedDataPlane}: each frame is decided
 * inline, on the test's thread, and time is a {@link ManualClock} the test moves.
 */
class ShardDecidersTest
{
    private static final long T0 = TimeUnit.SECONDS.toNanos(1_000);
    private static final String POLICIES = "{\"version\":1,"
        + "\"defaultPolicy\":{\"id\":\"default\",\"rate\":1,\"burst\":1,\"owner\":\"test\"},"
        + "\"policies\":["
        + "{\"id\":\"orders\",\"selector\":{\"route\":\"/v1/orders\"},\"rate\":1,\"period\":\"1s\",\"burst\":3,"
        + "\"scope\":\"TENANT\",\"owner\":\"test\"},"
        + "{\"id\":\"orders-next\",\"selector\":{\"route\":\"/v1/orders\"},\"rate\":1,\"period\":\"1s\",\"burst\":1,"
        + "\"scope\":\"TENANT\",\"mode\":\"SHADOW\",\"owner\":\"test\"},"
        + "{\"id\":\"search\",\"selector\":{\"route\":\"/v1/search\"},\"rate\":1,\"period\":\"1s\",\"burst\":5,"
        + "\"scope\":\"TENANT\",\"owner\":\"test\"},"
        + "{\"id\":\"search-global\",\"selector\":{\"route\":\"/v1/search\"},\"rate\":1,\"period\":\"1s\",\"burst\":3,"
        + "\"scope\":\"GLOBAL\",\"stacked\":true,\"owner\":\"test\"},"
        + "{\"id\":\"exports\",\"selector\":{\"route\":\"/v1/exports\"},\"maxConcurrent\":1,\"leaseTtl\":\"300s\","
        + "\"scope\":\"TENANT\",\"owner\":\"test\"}]}";

    private final ManualClock clock = new ManualClock(T0);
    private final List<ByteBuf> answers = new ArrayList<>();
    private EmbeddedDataPlane plane;
    private Shard shard;
    private long correlation;

    @BeforeEach
    void start()
    {
        plane = new EmbeddedDataPlane(POLICIES, 1, clock);
        shard = plane.shard();
    }

    @AfterEach
    void stop()
    {
        answers.forEach(ByteBuf::release);
        plane.close();
    }

    @Test
    void aPlainEntryIsGrantedUpToItsBurstThenRefusedUntilTheClockRefillsIt()
    {
        for (int i = 0; i < 3; i++)
        {
            final Answer granted = acquire("acme", "/v1/orders", 1);
            assertTrue(granted.allowed, "call " + i + " of a burst of 3");
            assertEquals(2 - i, granted.remaining);
        }
        final Answer refused = acquire("acme", "/v1/orders", 1);
        assertFalse(refused.allowed);
        assertEquals(ReasonCode.RATE_LIMITED, refused.reason);
        assertEquals(TimeUnit.SECONDS.toNanos(1), refused.retryAfterNanos, "one token a second");
        assertTrue(acquire("globex", "/v1/orders", 1).allowed, "another tenant has a bucket of its own");

        clock.advance(TimeUnit.MILLISECONDS.toNanos(999));
        assertFalse(acquire("acme", "/v1/orders", 1).allowed, "not a whole token yet");
        clock.advance(TimeUnit.MILLISECONDS.toNanos(1));
        assertTrue(acquire("acme", "/v1/orders", 1).allowed, "refilled by the clock");
    }

    @Test
    void aShadowIsCountedButNeverDecides()
    {
        final int ordinal = ordinal("orders-next");
        for (int i = 0; i < 3; i++)
        {
            assertTrue(acquire("acme", "/v1/orders", 1).allowed, "the enforced policy answers");
        }
        assertEquals(1, shard.shadowAllowed(ordinal), "the shadow's burst of 1");
        assertEquals(2, shard.shadowDenied(ordinal));
        assertEquals(3, shard.allowed(ordinal("orders")));
    }

    @Test
    void aShadowEvaluationIsComparedWithWhatWasEnforcedPerTenantAndRoute() throws Exception
    {
        for (int i = 0; i < 4; i++)
        {
            // enforced: 3 allowed then 1 denied; the shadow (burst 1): 1 then 3 denied
            acquire("acme", "/v1/orders", 1);
        }
        acquire("globex", "/v1/orders", 1);
        final CompletableFuture<ShadowComparisons.Comparison> read = ShadowComparisons.of(List.of(shard),
            plane.policies(), "orders-next", 0);
        plane.runPendingTasks(); // the shard's owner publishes its table
        final ShadowComparisons.Comparison compared = read.get(5, TimeUnit.SECONDS);
        assertEquals(1, compared.shadowVersion());
        assertEquals(0, compared.enforcedVersion(), "a shadow of a new id: another policy answered");
        assertEquals(2, compared.rows().size(), compared.toJson());
        final ShadowComparisons.Row acme = compared.rows().get(0);
        assertEquals("acme", acme.tenant(), "the most newly rejected first");
        assertEquals("/v1/orders", acme.route(), "the shadow's route template");
        assertEquals(4, acme.decisions());
        assertEquals(1, acme.enforcedRejections());
        assertEquals(3, acme.predictedRejections());
        assertEquals(2, acme.newlyRejected());
        assertEquals(0, acme.newlyFreed());
        assertEquals(1, compared.rows().get(1).decisions());
        assertEquals(0, compared.untracked());
        assertEquals(clock.wallNanos() / 1_000_000L, compared.sinceMillis(), "counted since the first evaluation");
    }

    @Test
    void aStackedBudgetIsChargedWithTheOwnPolicyAndTheTightestNamesTheAnswer()
    {
        final Answer first = acquire("acme", "/v1/search", 2);
        assertTrue(first.allowed);
        assertEquals("search-global", first.policy, "the shared budget (1 of 3 left) is tighter than acme's (3 of 5)");
        assertEquals(1, first.remaining);
        final Answer shared = acquire("globex", "/v1/search", 1);
        assertTrue(shared.allowed);
        assertEquals(0, shared.remaining, "globex spends the same shared budget");

        final Answer refused = acquire("globex", "/v1/search", 1);
        assertFalse(refused.allowed);
        assertEquals("search-global", refused.policy, "the scope that refused");
        assertEquals(ReasonCode.RATE_LIMITED, refused.reason);
    }

    @Test
    void aRefusedStackedRequestChargesNoScope()
    {
        for (int i = 0; i < 3; i++)
        {
            assertTrue(acquire("acme", "/v1/search", 1).allowed);
        }
        for (int i = 0; i < 5; i++)
        {
            assertFalse(acquire("initech", "/v1/search", 1).allowed, "the shared budget is spent");
        }
        clock.advance(TimeUnit.SECONDS.toNanos(3));
        // Charged by its 5 refused calls, initech's own budget would hold 3 now, as the shared one does, and
        // name the answer (a tie keeps the own policy); uncharged it holds 5 and the shared budget is the tighter.
        final Answer check = acquire("initech", "/v1/search", 0);
        assertTrue(check.allowed);
        assertEquals("search-global", check.policy);
        assertEquals(3, check.remaining);
    }

    @Test
    void aCheckTellsWhatOneTokenWouldGetAndChangesNothing()
    {
        for (int i = 0; i < 4; i++)
        {
            final Answer check = acquire("acme", "/v1/orders", 0);
            assertTrue(check.allowed);
            assertEquals(3, check.remaining, "a check spends nothing");
        }
        assertEquals(4, shard.shadowAllowed(ordinal("orders-next")),
            "the shadow (a burst of 1) tells what it would answer each time: its token is never spent");
        assertEquals(0, shard.shadowDenied(ordinal("orders-next")));
        assertTrue(acquire("acme", "/v1/orders", 3).allowed, "the whole burst is still there");
    }

    @Test
    void aLeaseIsHeldUntilReleasedAndAForeignIdFreesNothing()
    {
        final Answer first = acquire("acme", "/v1/exports", 1);
        assertTrue(first.allowed);
        assertTrue(first.leaseId != 0, "a concurrency limit's grant holds a lease");
        assertFalse(acquire("acme", "/v1/exports", 1).allowed, "maxConcurrent 1");

        release("acme", "/v1/exports", first.leaseId + 1, first.leaseCheck);
        assertFalse(acquire("acme", "/v1/exports", 1).allowed, "a lease id the key does not hold frees nothing");
        assertEquals(1, shard.releasesOfUnknownLeases(ordinal("exports")));

        release("acme", "/v1/exports", first.leaseId, first.leaseCheck);
        assertEquals(1, shard.released(ordinal("exports")));
        assertTrue(acquire("acme", "/v1/exports", 1).allowed, "the slot came back");
    }

    private int ordinal(final String id)
    {
        return plane.ordinal(id);
    }

    private Answer acquire(final String tenant, final String route, final int cost)
    {
        return Answer.read(answer(EmbeddedDataPlane.acquireFrame(++correlation, tenant, route, cost)));
    }

    private void release(final String tenant, final String route, final long leaseId, final int check)
    {
        final byte[] body = ReleaseCodec.body(leaseId, check, 1, AcquireCodec.encodeFields(tenant, "", "", route, "",
            ""));
        final ByteBuf frame = Unpooled.buffer();
        final int start = Frame.begin(frame, MessageType.RELEASE, ++correlation);
        frame.writeBytes(body);
        Frame.finish(frame, start);
        final Answer released = Answer.read(answer(frame));
        assertEquals(ReasonCode.RELEASED, released.reason);
    }

    private ByteBuf answer(final ByteBuf frame)
    {
        final ByteBuf out = plane.exchange(frame);
        assertTrue(out != null, "the frame was answered");
        answers.add(out);
        assertEquals(correlation, Frame.correlationId(out));
        return out;
    }

    /** The first record of a RESULT frame, with the policy it names and its lease, if any. */
    private record Answer(boolean allowed, ReasonCode reason, long remaining, long retryAfterNanos, String policy,
        long leaseId, int leaseCheck)
    {
        static Answer read(final ByteBuf frame)
        {
            assertEquals(MessageType.RESULT, Frame.type(frame), "a RESULT");
            final int record = ResultCodec.recordOffset(frame.readerIndex(), 0);
            final int count = frame.getUnsignedShort(frame.readerIndex() + Frame.HEADER_LENGTH);
            int at = ResultCodec.recordOffset(frame.readerIndex(), count);
            final int ref = ResultCodec.policyRef(frame, record);
            String policy = null;
            final int policies = frame.getUnsignedShort(at);
            at += 2;
            for (int p = 0; p < policies; p++)
            {
                final int length = frame.getUnsignedByte(at + 2);
                if (frame.getUnsignedShort(at) == ref)
                {
                    policy = frame.toString(at + 3, length, StandardCharsets.UTF_8);
                }
                at += 3 + length;
            }
            long leaseId = 0;
            int leaseCheck = 0;
            if (at < Frame.frameEnd(frame) && frame.getUnsignedShort(at) > 0)
            {
                leaseId = frame.getLong(at + 4);
                leaseCheck = frame.getInt(at + 12);
            }
            return new Answer((frame.getByte(record) & 1) != 0, ReasonCode.of(frame.getByte(record + 1)),
                frame.getLong(record + 8), frame.getLong(record + 24), policy, leaseId, leaseCheck);
        }

    }
}
