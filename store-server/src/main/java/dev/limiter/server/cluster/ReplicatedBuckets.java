package dev.limiter.server.cluster;

import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.protocol.policy.PolicyStateSnapshot;
import dev.limiter.protocol.policy.RegionShares;
import dev.limiter.raft.ReplicatedStateMachine;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.table.BucketTable;
import dev.limiter.server.table.BucketTableImage;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The committed bucket tables of the shards one Raft group owns, driven only by that group's
 * applied log entries (its Ratis apply thread is their single writer). Group 0 is the control
 * group: it also carries the policy commands. Entries:
 *
 * <pre>
 * DECISIONS: see {@link DecisionsEntry} (its one owner)
 * SYNC:      see {@link SyncEntry} (its one owner)
 *            (a leader's marker: copy committed into its deciding tables; submission is the marker's
 *            place in the leader's order of submissions, so it knows which of its batches follow it)
 * POLICY:    see {@link PolicyEntry} (its one owner; the reply is PolicyState.Outcome; control group only)
 * REGION_SHARES: see {@link RegionSharesEntry} (its one owner; the group's copy of its region's shares; other groups only)
 * </pre>
 * Applying a decision repeats exactly what the leader did (same key, policy, cost and cluster time,
 * in the same order), so every replica's tables equal the leader's. Nothing here reads a clock. In
 * any other group than the control group, a decision made under a policy version this replica has
 * not applied yet waits for it ({@link PolicyState#awaitRate}): the two logs are not ordered
 * against each other, but the rate of a version never changes once it exists.
 */
public final class ReplicatedBuckets implements ReplicatedStateMachine
{
    /** First int of a snapshot of this format. */
    private static final int SNAPSHOT_MAGIC = 0x4C494D32;

    /** Runs a sync of the leader's deciding tables from the committed ones, on their owner threads. */
    public interface SyncTarget
    {
        /**
         * Called on the apply thread with the committed tables frozen; returns when the copy is done.
         *
         * @param submission the marker's place in its leader's submissions (batches after it are not in the copy)
         */
        void syncFrom(BucketTable[] committed, long term, long submission);
    }

    /** Every shard's committed table, by shard id; this group reads and writes only its own. */
    private final BucketTable[] committed;
    /** The shards this group owns, ascending. */
    private final int[] owned;
    private final boolean control;
    private final PolicyState policies;
    private final String selfId;
    private final DecisionsEntry.Replayer replayer;
    private volatile SyncTarget syncTarget;
    /** Apply thread only. */
    private long appliedDecisions;
    /** This group's copy of the region's shares (another group than the control group): the newest generation applied. */
    private volatile RegionShares regionShares = RegionShares.getDefaultInstance();
    private final List<Runnable> regionSharesListeners = new CopyOnWriteArrayList<>();
    /** What other threads may read, published after every entry (tables are the apply thread's alone). */
    private volatile Published published = new Published(0, 0);

    /** Decisions applied and the digest of every committed table, as of one applied entry. */
    private record Published(long appliedDecisions, long digest)
    {
    }

    /**
     * @param committed every shard's committed table, by shard id (shared by the node's groups)
     * @param owned     the shards this group owns
     * @param control   whether this is the control group (policy commands, and their snapshot)
     */
    public ReplicatedBuckets(final BucketTable[] committed, final int[] owned, final boolean control, final PolicyState policies,
        final String selfId)
    {
        this.committed = committed;
        this.owned = owned.clone();
        this.control = control;
        this.policies = policies;
        this.selfId = selfId;
        this.replayer = new DecisionsEntry.Replayer(control ? policies::rate : policies::awaitRate);
    }

    /** The shards this group owns, ascending. */
    public int[] owned()
    {
        return owned.clone();
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
        if (DecisionsEntry.isDecisions(type))
        {
            applyDecisions(payload);
            publish();
        }
        else if (type == SyncEntry.TYPE)
        {
            final SyncEntry marker = SyncEntry.decode(payload);
            final SyncTarget target = syncTarget;
            if (target != null && selfId.equals(marker.nodeId()))
            {
                target.syncFrom(committed, marker.term(), marker.submission());
            }
        }
        else if (type == PolicyEntry.TYPE)
        {
            if (!control)
            {
                throw new IllegalStateException("a POLICY entry at index " + index + " of a group that does not carry policies");
            }
            final PolicyCommand command;
            try
            {
                command = PolicyEntry.decode(payload);
            }
            catch (final IllegalArgumentException e)
            {
                throw new IllegalStateException("malformed policy command at index " + index, e);
            }
            return policies.apply(command).encode();
        }
        else if (type == RegionSharesEntry.TYPE)
        {
            applyRegionShares(index, payload);
        }
        else
        {
            throw new IllegalStateException("unknown entry type " + type + " at index " + index);
        }
        return null;
    }

    private void applyRegionShares(final long index, final ByteBuffer payload)
    {
        if (control)
        {
            throw new IllegalStateException("a REGION_SHARES copy at index " + index + " of the control group, which holds the shares themselves");
        }
        final RegionShares copy;
        try
        {
            copy = RegionSharesEntry.decode(payload);
        }
        catch (final IllegalArgumentException e)
        {
            throw new IllegalStateException("malformed REGION_SHARES copy at index " + index, e);
        }
        // Copies only move forward: a leader that copied from an older state of the control group changes nothing.
        if (copy.getGeneration() > regionShares.getGeneration())
        {
            regionShares = copy;
            regionSharesListeners.forEach(Runnable::run);
        }
    }

    /**
     * This group's copy of its region's shares, as applied here (another group than the control
     * group; generation 0 and no shares before any copy): what its shards decide with at most.
     */
    public RegionShares regionShares()
    {
        return regionShares;
    }

    /** {@code listener} runs on the apply thread after every copy that changed this group's shares, and after a restore. */
    public void onRegionShares(final Runnable listener)
    {
        regionSharesListeners.add(listener);
    }

    private void applyDecisions(final ByteBuffer payload)
    {
        // Every section is checked before any is applied: an entry is applied whole or not at all.
        for (int at = payload.position(); at < payload.limit(); at = DecisionsEntry.sectionEnd(payload, at))
        {
            final int shard = DecisionsEntry.shard(payload, at);
            if (shard >= committed.length || !owns(shard))
            {
                throw new IllegalStateException("a DECISIONS entry names shard " + shard + ", which this group does not own (" +
                    committed.length + " shards); every member of a cluster must run the same --shards and --raft-groups");
            }
        }
        int at = payload.position();
        while (at < payload.limit())
        {
            final BucketTable table = committed[DecisionsEntry.shard(payload, at)];
            appliedDecisions += DecisionsEntry.count(payload, at);
            at = replayer.replaySection(payload, at, table);
            table.publish();
        }
    }

    /**
     * Raft calls this state machine from one thread at a time, but not always the same one (start-up
     * recovery, then the apply thread): whichever runs a callback owns the tables meanwhile.
     */
    private void claimTables()
    {
        for (final int shard : owned)
        {
            committed[shard].claim();
        }
    }

    private boolean owns(final int shard)
    {
        return Arrays.binarySearch(owned, shard) >= 0;
    }

    /** Apply thread: makes the counts and digests of the committed tables readable elsewhere. */
    private void publish()
    {
        long digest = 0;
        for (final int shard : owned)
        {
            digest = digest * 1_000_003 + committed[shard].trackedDigest();
        }
        published = new Published(appliedDecisions, digest);
    }

    /** Decisions applied so far by this group on this replica, as of its latest entry applied (any thread). */
    public long appliedDecisions()
    {
        return published.appliedDecisions();
    }

    /**
     * Digest of this group's committed tables as of the same entry as {@link #appliedDecisions()}
     * (any thread): equal on replicas that applied the same log.
     */
    public long digest()
    {
        return published.digest();
    }

    public BucketTable committed(final int shard)
    {
        return committed[shard];
    }

    /** Apply thread: the policies (control group) and a memory copy of every owned table; encoded later by the snapshot writer. */
    @Override
    public CapturedState captureSnapshot()
    {
        claimTables();
        // The control group's snapshot holds the policies; another group's, its copy of the region's shares (if any).
        final byte[] controlState = control ? policies.snapshot().toByteArray() :
            regionShares.getGeneration() > 0 ? regionShares.toByteArray() : new byte[0];
        final BucketTableImage[] images = new BucketTableImage[owned.length];
        final CapturedBuckets captured = new CapturedBuckets(controlState, appliedDecisions, images);
        try
        {
            for (int i = 0; i < owned.length; i++)
            {
                images[i] = committed[owned[i]].image();
            }
        }
        catch (final RuntimeException | OutOfMemoryError e)
        {
            captured.close(); // the copies made so far (no room for the next one, say)
            throw e;
        }
        return captured;
    }

    /** A group's state as captured, in the snapshot format {@link #restoreSnapshot} reads. */
    private record CapturedBuckets(byte[] controlState, long appliedDecisions, BucketTableImage[] images) implements CapturedState
    {
        @Override
        public void writeTo(final OutputStream out) throws IOException
        {
            final DataOutputStream data = new DataOutputStream(out);
            data.writeInt(SNAPSHOT_MAGIC);
            data.writeInt(controlState.length);
            data.write(controlState);
            data.writeInt(images.length);
            data.writeLong(appliedDecisions);
            final byte[] key = new byte[BucketTable.MAX_KEY_LENGTH];
            final IOException[] failure = new IOException[1];
            for (final BucketTableImage image : images)
            {
                data.writeInt(image.size());
                image.forEach((keyBuffer, keyOffset, keyLength, policy, tokens, last) ->
                {
                    if (failure[0] != null)
                    {
                        return;
                    }
                    try
                    {
                        data.writeShort(keyLength);
                        keyBuffer.getBytes(keyOffset, key, 0, keyLength);
                        data.write(key, 0, keyLength);
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
        public void close()
        {
            for (final BucketTableImage image : images)
            {
                if (image != null)
                {
                    image.close();
                }
            }
        }
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
        final byte[] controlState = new byte[data.readInt()];
        data.readFully(controlState);
        if (control)
        {
            policies.restore(PolicyStateSnapshot.parseFrom(controlState));
        }
        else
        {
            regionShares = RegionShares.parseFrom(controlState);
            regionSharesListeners.forEach(Runnable::run);
        }
        final int shards = data.readInt();
        if (shards != owned.length)
        {
            throw new IOException("snapshot has " + shards + " shards, this node's group " + owned.length +
                "; every member of a cluster must run the same --shards and --raft-groups");
        }
        appliedDecisions = data.readLong();
        for (final int shard : owned)
        {
            final BucketTable table = committed[shard];
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
        for (final int shard : owned)
        {
            committed[shard].clear();
            committed[shard].publish();
        }
        appliedDecisions = 0;
        publish();
        if (control)
        {
            policies.reset();
        }
        else
        {
            regionShares = RegionShares.getDefaultInstance();
            regionSharesListeners.forEach(Runnable::run);
        }
    }

    public PolicyState policies()
    {
        return policies;
    }
}
