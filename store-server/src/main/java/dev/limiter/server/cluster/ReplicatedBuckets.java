package dev.limiter.server.cluster;

import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicyStateSnapshot;
import dev.limiter.raft.ReplicatedStateMachine;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.table.BucketTable;
import dev.limiter.server.table.Decision;
import dev.limiter.server.table.KeyHash;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The committed bucket tables of every shard, driven only by applied log entries (the Ratis apply
 * thread is their single writer). Entries:
 *
 * <pre>
 * DECISIONS: u8 1 | u16 shard | u32 count | i64 reserved (0)
 *            | count x (u16 policy | i32 cost | i64 decision time (ns) | u16 key length | key)
 * SYNC:      u8 2 | i64 term | u16 id length | id       (a new leader's marker: copy committed into its deciding tables)
 * POLICY:    u8 3 | PolicyCommand (protobuf)           (a control-plane change; the reply is PolicyState.Outcome)
 * </pre>
 * A key starts with its policy's ordinal and version (u16, u32): a decision is replayed with the
 * rate of the version it was made under, even when a later version was applied before it.
 *
 * Applying a decision repeats exactly what the leader did (same key, policy, cost and cluster time,
 * in the same order), so every replica's tables equal the leader's. Nothing here reads a clock.
 */
public final class ReplicatedBuckets implements ReplicatedStateMachine
{
    public static final byte DECISIONS = 1;
    /** Bytes before the first record of a DECISIONS entry. */
    public static final int DECISIONS_HEADER = 15;
    static final byte SYNC = 2;
    public static final byte POLICY = 3;
    /** First int of a snapshot of this format. */
    private static final int SNAPSHOT_MAGIC = 0x4C494D32;

    /** Runs a sync of the leader's deciding tables from the committed ones, on their owner threads. */
    public interface SyncTarget
    {
        /** Called on the apply thread with the committed tables frozen; returns when the copy is done. */
        void syncFrom(BucketTable[] committed, long term);
    }

    private final BucketTable[] committed;
    private final PolicyState policies;
    private final String selfId;
    private final Decision scratch = new Decision();
    private final UnsafeBuffer keyView = new UnsafeBuffer(new byte[0]);
    private volatile SyncTarget syncTarget;
    /** Apply thread only. */
    private long appliedDecisions;
    /** What other threads may read, published after every entry (tables are the apply thread's alone). */
    private volatile Published published = new Published(0, 0);

    /** Decisions applied and the digest of every committed table, as of one applied entry. */
    private record Published(long appliedDecisions, long digest)
    {
    }

    public ReplicatedBuckets(final BucketTable[] committed, final PolicyState policies, final String selfId)
    {
        this.committed = committed;
        this.policies = policies;
        this.selfId = selfId;
    }

    public void syncTarget(final SyncTarget target)
    {
        this.syncTarget = target;
    }

    @Override
    public ByteBuffer apply(final long index, final long clusterNanos, final ByteBuffer payload)
    {
        claimTables();
        final byte type = payload.get(payload.position());
        if (type == DECISIONS)
        {
            applyDecisions(payload);
            publish();
        }
        else if (type == SYNC)
        {
            final long term = payload.getLong(payload.position() + 1);
            final int idLength = payload.getShort(payload.position() + 9) & 0xFFFF;
            final byte[] id = new byte[idLength];
            payload.get(payload.position() + 11, id);
            final SyncTarget target = syncTarget;
            if (target != null && selfId.equals(new String(id, StandardCharsets.UTF_8)))
            {
                target.syncFrom(committed, term);
            }
        }
        else if (type == POLICY)
        {
            final PolicyCommand command;
            try
            {
                command = PolicyCommand.parseFrom(payload.duplicate().position(payload.position() + 1));
            }
            catch (final com.google.protobuf.InvalidProtocolBufferException e)
            {
                throw new IllegalStateException("malformed policy command at index " + index, e);
            }
            return policies.apply(command).encode();
        }
        else
        {
            throw new IllegalStateException("unknown entry type " + type + " at index " + index);
        }
        return null;
    }

    private void applyDecisions(final ByteBuffer payload)
    {
        int at = payload.position() + 1;
        final int shard = payload.getShort(at) & 0xFFFF;
        final int count = payload.getInt(at + 2);
        at += 14;
        if (shard >= committed.length)
        {
            throw new IllegalStateException("a DECISIONS entry names shard " + shard + " of " + committed.length +
                "; every member of a cluster must run the same --shards");
        }
        final BucketTable table = committed[shard];
        for (int i = 0; i < count; i++)
        {
            final int policy = payload.getShort(at) & 0xFFFF;
            final int cost = payload.getInt(at + 2);
            final long time = payload.getLong(at + 6);
            final int keyLength = payload.getShort(at + 14) & 0xFFFF;
            at += 16;
            keyView.wrap(payload, at, keyLength);
            final long version = keyView.getInt(2, java.nio.ByteOrder.BIG_ENDIAN) & 0xFFFF_FFFFL;
            table.acquire(keyView, 0, keyLength, KeyHash.hash(keyView, 0, keyLength), policy, policies.rate(policy, version), cost,
                time, scratch);
            at += keyLength;
        }
        appliedDecisions += count;
        table.publish();
    }

    /**
     * Raft calls this state machine from one thread at a time, but not always the same one (start-up
     * recovery, then the apply thread): whichever runs a callback owns the tables meanwhile.
     */
    private void claimTables()
    {
        for (final BucketTable table : committed)
        {
            table.claim();
        }
    }

    /** Apply thread: makes the counts and digests of the committed tables readable elsewhere. */
    private void publish()
    {
        long digest = 0;
        for (final BucketTable table : committed)
        {
            digest = digest * 1_000_003 + table.trackedDigest();
        }
        published = new Published(appliedDecisions, digest);
    }

    /** Decisions applied so far on this replica, as of the latest entry applied (any thread). */
    public long appliedDecisions()
    {
        return published.appliedDecisions();
    }

    /**
     * Digest of every committed table as of the same entry as {@link #appliedDecisions()} (any
     * thread): equal on replicas that applied the same log.
     */
    public long digest()
    {
        return published.digest();
    }

    public BucketTable committed(final int shard)
    {
        return committed[shard];
    }

    @Override
    public void writeSnapshot(final OutputStream out) throws IOException
    {
        claimTables();
        final DataOutputStream data = new DataOutputStream(out);
        data.writeInt(SNAPSHOT_MAGIC);
        final byte[] control = policies.snapshot().toByteArray();
        data.writeInt(control.length);
        data.write(control);
        data.writeInt(committed.length);
        data.writeLong(appliedDecisions);
        for (final BucketTable table : committed)
        {
            data.writeInt(table.size());
            final IOException[] failure = new IOException[1];
            table.forEach((keyBuffer, keyOffset, keyLength, policy, tokens, last) ->
            {
                try
                {
                    data.writeShort(keyLength);
                    final byte[] key = new byte[keyLength];
                    keyBuffer.getBytes(keyOffset, key);
                    data.write(key);
                    data.writeShort(policy);
                    data.writeLong(tokens);
                    data.writeLong(last);
                }
                catch (final IOException e)
                {
                    failure[0] = e;
                }
            });
            if (failure[0] != null)
            {
                throw failure[0];
            }
        }
        data.flush();
    }

    @Override
    public void restoreSnapshot(final InputStream in) throws IOException
    {
        claimTables();
        final DataInputStream data = new DataInputStream(in);
        if (data.readInt() != SNAPSHOT_MAGIC)
        {
            throw new IOException("snapshot written by an older version of the store; remove the node's data directory and let it catch up");
        }
        final byte[] control = new byte[data.readInt()];
        data.readFully(control);
        policies.restore(PolicyStateSnapshot.parseFrom(control));
        final int shards = data.readInt();
        if (shards != committed.length)
        {
            throw new IOException("snapshot has " + shards + " shards, this node " + committed.length +
                "; every member of a cluster must run the same --shards");
        }
        appliedDecisions = data.readLong();
        for (final BucketTable table : committed)
        {
            table.clear();
            final int count = data.readInt();
            for (int i = 0; i < count; i++)
            {
                final byte[] key = new byte[data.readUnsignedShort()];
                data.readFully(key);
                final int policy = data.readUnsignedShort();
                final long tokens = data.readLong();
                final long last = data.readLong();
                if (!table.restore(new UnsafeBuffer(key), 0, key.length, policy, tokens, last))
                {
                    throw new IOException("snapshot holds more buckets than --max-buckets-per-shard allows");
                }
            }
            table.publish();
        }
        publish();
    }

    @Override
    public void reset()
    {
        claimTables();
        for (final BucketTable table : committed)
        {
            table.clear();
            table.publish();
        }
        appliedDecisions = 0;
        publish();
        policies.reset();
    }

    /** A control-plane change as a log entry. */
    public static ByteBuffer policyEntry(final PolicyCommand command)
    {
        final byte[] body = command.toByteArray();
        return ByteBuffer.allocate(1 + body.length).put(POLICY).put(body).flip();
    }

    public PolicyState policies()
    {
        return policies;
    }

    static ByteBuffer syncEntry(final long term, final String nodeId)
    {
        final byte[] id = nodeId.getBytes(StandardCharsets.UTF_8);
        final ByteBuffer entry = ByteBuffer.allocate(11 + id.length);
        entry.put(SYNC).putLong(term).putShort((short)id.length).put(id);
        return entry.flip();
    }
}
