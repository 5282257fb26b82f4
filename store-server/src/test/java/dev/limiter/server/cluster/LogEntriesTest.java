package dev.limiter.server.cluster;

import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.RollbackCommand;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The SYNC and POLICY entries read back exactly what was written, and refuse what is not theirs. */
class LogEntriesTest
{
    @Test
    void aSyncMarkerReadsBackItsTermNodeAndSubmission()
    {
        for (final SyncEntry written : new SyncEntry[] {
            new SyncEntry(1, "n1", 0), new SyncEntry(Long.MAX_VALUE, "node-with-a-long-name_42", 123_456_789L), new SyncEntry(7, "é", -1)})
        {
            final ByteBuffer entry = written.encode();
            assertEquals(SyncEntry.TYPE, entry.get(0));
            assertEquals(written, SyncEntry.decode(entry));
            assertEquals(0, entry.position(), "decode leaves the buffer where it was");
        }
    }

    @Test
    void aSyncMarkerFromBeforeSubmissionNumbersSaysNothingAboutLaterBatches()
    {
        final byte[] id = "n2".getBytes(StandardCharsets.UTF_8);
        final ByteBuffer old = ByteBuffer.allocate(11 + id.length).put(SyncEntry.TYPE).putLong(5).putShort((short)id.length).put(id).flip();
        assertEquals(new SyncEntry(5, "n2", Long.MAX_VALUE), SyncEntry.decode(old));
    }

    @Test
    void aSyncMarkerCutShortOrOfAnotherTypeIsRefused()
    {
        final ByteBuffer whole = new SyncEntry(3, "n3", 9).encode();
        final ByteBuffer cut = whole.duplicate().limit(12);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> SyncEntry.decode(cut)).getMessage().contains("cut short"));
        assertThrows(IllegalArgumentException.class, () -> SyncEntry.decode(PolicyEntry.encode(PolicyCommand.getDefaultInstance())));
        assertThrows(IllegalArgumentException.class, () -> SyncEntry.decode(ByteBuffer.allocate(0)));
    }

    @Test
    void aPolicyEntryReadsBackItsCommand()
    {
        final PolicyCommand put = PolicyCommand.newBuilder().setActor("alice")
            .setPut(Policy.newBuilder().setId("orders").setRate(100).setOwner("team").setReason("launch")).build();
        final PolicyCommand rollback = PolicyCommand.newBuilder().setActor("bob")
            .setRollback(RollbackCommand.newBuilder().setId("orders").setToVersion(1)).build();
        for (final PolicyCommand command : new PolicyCommand[] {put, rollback, PolicyCommand.getDefaultInstance()})
        {
            final ByteBuffer entry = PolicyEntry.encode(command);
            assertEquals(PolicyEntry.TYPE, entry.get(0));
            assertEquals(command, PolicyEntry.decode(entry));
        }
    }

    @Test
    void aPolicyEntryThatIsNotOneIsRefused()
    {
        assertThrows(IllegalArgumentException.class, () -> PolicyEntry.decode(new SyncEntry(1, "n1", 1).encode()));
        final ByteBuffer garbage = ByteBuffer.wrap(new byte[] {PolicyEntry.TYPE, (byte)0xFF, (byte)0xFF, (byte)0xFF});
        assertTrue(assertThrows(IllegalArgumentException.class, () -> PolicyEntry.decode(garbage)).getMessage().contains("PolicyCommand"));
    }

    @Test
    void theEntryTypesAreDistinct()
    {
        // Set.of refuses duplicates: both DECISIONS layouts, SYNC and POLICY each have their own first byte.
        assertEquals(4, java.util.Set.of(DecisionsEntry.TYPE, DecisionsEntry.COMPACT_TYPE, SyncEntry.TYPE, PolicyEntry.TYPE).size());
    }
}
