package dev.limiter.raft;

import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftGroupMemberId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.raftlog.RaftLog;
import org.apache.ratis.server.storage.FileInfo;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.statemachine.impl.BaseStateMachine;
import org.apache.ratis.statemachine.impl.SimpleStateMachineStorage;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.thirdparty.com.google.protobuf.UnsafeByteOperations;
import org.apache.ratis.io.MD5Hash;
import org.apache.ratis.util.LifeCycle;
import org.apache.ratis.util.MD5FileUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Adapts a {@link ReplicatedStateMachine} to Ratis, and owns the cluster clock.
 *
 * <p>Entry format: {@code u8 format (1) | i64 cluster nanos | payload}. Only the leader stamps (in
 * {@link #startTransaction}); every replica applies exactly the stamped bytes and never reads its
 * own clock. A leader's first stamp in a term continues just after the latest stamp it has seen,
 * so the time an election took is not credited as elapsed cluster time. Stamps are clamped to be
 * non-decreasing in log order when applied (old-term entries committed by a new leader may carry
 * later stamps than its first ones); the clamp depends only on the log, so replicas agree.
 *
 * <p>Lifecycle: Ratis's updater asserts PAUSED before reloading a snapshot a follower received,
 * which {@link BaseStateMachine} never reaches by itself; this class moves through
 * STARTING/RUNNING on initialise, PAUSING/PAUSED on pause and back on reinitialise.
 */
final class StampedStateMachine extends BaseStateMachine
{
    private static final Logger LOG = LoggerFactory.getLogger(StampedStateMachine.class);
    static final byte FORMAT = 1;
    static final int HEADER = 9;

    private final ReplicatedStateMachine application;
    private final SimpleStateMachineStorage storage = new SimpleStateMachineStorage();
    private final List<LeaderListener> listeners = new CopyOnWriteArrayList<>();
    private final String nodeId;
    private final AtomicLong snapshotsInstalled = new AtomicLong();
    private final Executor snapshotWriter;
    private static final long SNAPSHOT_CLOSE_WAIT_SECONDS = 30;
    /** Beside a group's log: second names of purged segments, freed off the log thread (see {@link SegmentTrash}). */
    static final String PURGED_SEGMENTS_DIR = "purged-segments";
    private static final long TRASH_CHECK_MILLIS = 200;
    private static final int TRASH_CHECKS = 50;
    private volatile SegmentTrash segmentTrash;
    /** After a failed snapshot write, the next capture waits this long. */
    private static final long SNAPSHOT_RETRY_NANOS = TimeUnit.SECONDS.toNanos(10);
    /** Apply thread: no capture before this (System.nanoTime()). */
    private long retryCaptureAfterNanos = System.nanoTime();
    /** Suffix of a snapshot file while it is written (renamed without it once synced). */
    static final String UNFINISHED_SUFFIX = ".tmp";

    /** Latest stamp applied (after clamping); read by the leader when it starts a term. */
    private volatile long lastAppliedStamp = Long.MIN_VALUE;
    /** Leader side, guarded by this: latest stamp issued and the term its clock offset belongs to. */
    private long lastIssuedStamp = Long.MIN_VALUE;
    private long clockTerm = -1;
    private long clockOffset;

    /**
     * @param snapshotWriter runs the disk half of each snapshot (one at a time per group is enough:
     *                       a snapshot is due only every so many entries)
     */
    StampedStateMachine(final ReplicatedStateMachine application, final String nodeId, final Executor snapshotWriter)
    {
        this.application = application;
        this.nodeId = nodeId;
        this.snapshotWriter = snapshotWriter;
    }

    void addListener(final LeaderListener listener)
    {
        listeners.add(listener);
    }

    private volatile long lastSnapshotBytes;
    private volatile long lastSnapshotNanos;
    private volatile long lastSnapshotCopyNanos;
    /** Written by the apply thread only: the snapshot on its way to disk, or on disk and not yet reported to Ratis. */
    private volatile CompletableFuture<SingleFileSnapshotInfo> snapshotWrite;
    /** Apply thread: the newest snapshot index Ratis knows of (reported by us, loaded or installed). */
    private long knownSnapshotIndex = RaftLog.INVALID_LOG_INDEX;
    private final AtomicLong snapshotsTaken = new AtomicLong();

    long lastSnapshotBytes()
    {
        return lastSnapshotBytes;
    }

    long lastSnapshotNanos()
    {
        return lastSnapshotNanos;
    }

    long purgedSegmentsFreed()
    {
        final SegmentTrash trash = segmentTrash;
        return trash == null ? 0 : trash.freed();
    }

    long lastSnapshotCopyNanos()
    {
        return lastSnapshotCopyNanos;
    }

    long snapshotsTaken()
    {
        return snapshotsTaken.get();
    }

    long snapshotsInstalled()
    {
        return snapshotsInstalled.get();
    }

    long lastAppliedStamp()
    {
        return lastAppliedStamp;
    }

    @Override
    public void initialize(final RaftServer server, final RaftGroupId groupId, final RaftStorage raftStorage) throws IOException
    {
        getLifeCycle().startAndTransition(() ->
        {
            super.initialize(server, groupId, raftStorage);
            storage.init(raftStorage);
            segmentTrash = new SegmentTrash(raftStorage.getStorageDir().getCurrentDir().toPath(),
                raftStorage.getStorageDir().getRoot().toPath().resolve(PURGED_SEGMENTS_DIR));
            segmentTrash.clear();
            removeUnfinishedSnapshotWrites();
            loadLatestSnapshot();
        });
    }

    @Override
    public void pause()
    {
        // Ratis pauses once per snapshot chunk: only the first call moves the state.
        if (getLifeCycle().getCurrentState() == LifeCycle.State.RUNNING)
        {
            getLifeCycle().transition(LifeCycle.State.PAUSING);
            getLifeCycle().transition(LifeCycle.State.PAUSED);
        }
    }

    @Override
    public void reinitialize() throws IOException
    {
        // A follower received a snapshot from the leader: load it, then run again.
        loadLatestSnapshot();
        snapshotsInstalled.incrementAndGet();
        getLifeCycle().transitionIfNotEqual(LifeCycle.State.STARTING);
        getLifeCycle().transition(LifeCycle.State.RUNNING);
    }

    @Override
    public SimpleStateMachineStorage getStateMachineStorage()
    {
        return storage;
    }

    /**
     * A snapshot write cut short (the process killed) leaves its temporary file: never loaded (the
     * name is not a snapshot's), but as large as a snapshot, so it is removed at start.
     */
    private void removeUnfinishedSnapshotWrites() throws IOException
    {
        final File[] unfinished = storage.getSnapshotFile(0, 0).getParentFile().listFiles((dir, name) -> name.endsWith(UNFINISHED_SUFFIX));
        if (unfinished == null)
        {
            return;
        }
        for (final File file : unfinished)
        {
            Files.deleteIfExists(file.toPath());
            LOG.info("{}: removed {}, a snapshot whose write was cut short", nodeId, file);
        }
    }

    private void loadLatestSnapshot() throws IOException
    {
        final SingleFileSnapshotInfo snapshot = storage.loadLatestSnapshot();
        if (snapshot == null)
        {
            return;
        }
        final Path file = snapshot.getFile().getPath();
        if (snapshot.getFile().getFileDigest() != null)
        {
            MD5FileUtil.verifySavedMD5(file.toFile(), snapshot.getFile().getFileDigest());
        }
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(Files.newInputStream(file))))
        {
            final long stamp = in.readLong();
            application.reset();
            application.restoreSnapshot(in);
            lastAppliedStamp = stamp;
        }
        updateLastAppliedTermIndex(snapshot.getTermIndex());
        knownSnapshotIndex = snapshot.getIndex();
        LOG.info("{}: restored snapshot {} (cluster time {} ns)", nodeId, snapshot.getTermIndex(), lastAppliedStamp);
    }

    /**
     * Called by Ratis on the apply thread when a snapshot is due (every so many entries, on request,
     * at shutdown). Captures the state here (a memory copy) and encodes and writes it on the snapshot
     * writer thread, so entries keep applying while the file is written and synced. Returns
     * {@link RaftLog#INVALID_LOG_INDEX} while a write is under way; Ratis asks again after its next
     * apply and then learns the written snapshot's index (and purges the log up to it).
     */
    @Override
    public long takeSnapshot()
    {
        final CompletableFuture<SingleFileSnapshotInfo> write = snapshotWrite;
        if (write != null)
        {
            if (!write.isDone())
            {
                return RaftLog.INVALID_LOG_INDEX;
            }
            snapshotWrite = null;
            final SingleFileSnapshotInfo written = write.exceptionally(failure -> null).join(); // failures are logged
            if (written != null && written.getIndex() > knownSnapshotIndex)
            {
                knownSnapshotIndex = written.getIndex();
                emptySegmentTrash(TRASH_CHECKS);
                return written.getIndex(); // Ratis now purges the log up to it, deleting segments on its log thread
            }
            if (written == null)
            {
                pauseCaptures(); // failed (a full disk, say)
            }
            // Else overtaken by a snapshot installed from the leader meanwhile: take a new one now.
        }
        if (System.nanoTime() - retryCaptureAfterNanos < 0)
        {
            return RaftLog.INVALID_LOG_INDEX;
        }
        final TermIndex applied = getLastAppliedTermIndex();
        if (applied == null || applied.getIndex() < 0)
        {
            return RaftLog.INVALID_LOG_INDEX;
        }
        if (applied.getIndex() == knownSnapshotIndex)
        {
            return knownSnapshotIndex; // nothing applied since: that snapshot is this state
        }
        final long start = System.nanoTime();
        final long stamp = lastAppliedStamp;
        final ReplicatedStateMachine.CapturedState state;
        try
        {
            state = application.captureSnapshot();
        }
        catch (final RuntimeException | OutOfMemoryError | LinkageError e)
        {
            // OutOfMemoryError: no direct memory left for the copy. LinkageError: a class missing from a jar
            // rewritten under the running node. Thrown to Ratis, either would end the member, and Ratis'
            // updater would retry the snapshot in a tight loop meanwhile, logging a stack trace each time.
            LOG.error("{}: could not capture the state for a snapshot at {} ({}); the log is kept", nodeId, applied, captureFailure(e), e);
            pauseCaptures();
            return RaftLog.INVALID_LOG_INDEX;
        }
        lastSnapshotCopyNanos = System.nanoTime() - start;
        try
        {
            snapshotWrite = CompletableFuture.supplyAsync(() -> writeToDisk(state, stamp, applied, start), snapshotWriter);
        }
        catch (final RejectedExecutionException e)
        {
            state.close(); // the node is closing
        }
        return RaftLog.INVALID_LOG_INDEX;
    }

    /** What a failed capture means for the operator. */
    private static String captureFailure(final Throwable failure)
    {
        if (failure instanceof OutOfMemoryError)
        {
            return "a copy needs room for the group's tables again: see -XX:MaxDirectMemorySize";
        }
        if (failure instanceof LinkageError)
        {
            return "a class is missing: was the node's jar rebuilt under it? restart it";
        }
        return "a bug";
    }

    /** Apply thread, after a failed snapshot: the next try waits, rather than copying the tables on every apply meanwhile. */
    private void pauseCaptures()
    {
        retryCaptureAfterNanos = System.nanoTime() + SNAPSHOT_RETRY_NANOS;
    }

    /** Snapshot writer thread: the captured state to a file under a temporary name, synced, then renamed. */
    private SingleFileSnapshotInfo writeToDisk(final ReplicatedStateMachine.CapturedState state, final long stamp,
        final TermIndex applied, final long started)
    {
        final File target = storage.getSnapshotFile(applied.getTerm(), applied.getIndex());
        final Path temp = target.toPath().resolveSibling(target.getName() + UNFINISHED_SUFFIX);
        try (state)
        {
            final MessageDigest digest = MD5Hash.newDigester();
            try (FileOutputStream raw = new FileOutputStream(temp.toFile());
                 DataOutputStream out = new DataOutputStream(new DigestOutputStream(new BufferedOutputStream(raw, 1 << 16), digest)))
            {
                out.writeLong(stamp);
                state.writeTo(out);
                out.flush();
                raw.getFD().sync(); // on disk before the rename: the log is purged up to this snapshot
            }
            // Written aside and renamed: a crash mid-write never leaves a torn snapshot under a valid name.
            Files.move(temp, target.toPath(), StandardCopyOption.ATOMIC_MOVE);
            final MD5Hash md5 = new MD5Hash(digest.digest());
            MD5FileUtil.saveMD5File(target, md5);
            final SingleFileSnapshotInfo info = new SingleFileSnapshotInfo(new FileInfo(target.toPath(), md5), applied);
            storage.updateLatestSnapshot(info);
            segmentTrash.link(applied.getIndex()); // before Ratis may purge them, once it learns this index
            lastSnapshotBytes = Files.size(target.toPath());
            lastSnapshotNanos = System.nanoTime() - started;
            snapshotsTaken.incrementAndGet();
            return info;
        }
        catch (final IOException | RuntimeException e)
        {
            LOG.error("{}: could not write the snapshot at {} to {}; the log is kept and the next snapshot tries again",
                nodeId, applied, target, e);
            try
            {
                Files.deleteIfExists(temp);
            }
            catch (final IOException ignored)
            {
                // the name never matches a snapshot's, so a leftover is never loaded
            }
            throw e instanceof IOException io ? new UncheckedIOException(io) : (RuntimeException)e;
        }
    }

    /**
     * Frees the segments Ratis purged after a snapshot, on the snapshot writer thread: Ratis deletes
     * them shortly after it learns the index, so this looks every {@value #TRASH_CHECK_MILLIS} ms
     * until none is left (a segment Ratis keeps longer, for a member that lags, waits for the next
     * snapshot's look).
     */
    private void emptySegmentTrash(final int checksLeft)
    {
        CompletableFuture.runAsync(() ->
        {
            if (segmentTrash.empty() > 0 && checksLeft > 1)
            {
                emptySegmentTrash(checksLeft - 1);
            }
        }, CompletableFuture.delayedExecutor(TRASH_CHECK_MILLIS, TimeUnit.MILLISECONDS, snapshotWriter));
    }

    /** Completes when the snapshot being written (if any) is on disk or has failed. */
    CompletableFuture<?> snapshotWritten()
    {
        final CompletableFuture<SingleFileSnapshotInfo> write = snapshotWrite;
        return write == null ? CompletableFuture.completedFuture(null) : write.handle((info, failure) -> info);
    }

    @Override
    public void close() throws IOException
    {
        // Ratis takes a last snapshot at shutdown: let it reach the disk before the node goes.
        try
        {
            snapshotWritten().get(SNAPSHOT_CLOSE_WAIT_SECONDS, TimeUnit.SECONDS);
        }
        catch (final TimeoutException e)
        {
            LOG.warn("{}: closed while a snapshot was still being written after {} s; the log still holds its entries",
                nodeId, SNAPSHOT_CLOSE_WAIT_SECONDS);
        }
        catch (final ExecutionException e)
        {
            // logged by the writer
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
        super.close();
    }

    @Override
    public TransactionContext startTransaction(final RaftClientRequest request) throws IOException
    {
        final ByteString payload = request.getMessage().getContent();
        final long stamp = stamp(currentTerm());
        final byte[] header = new byte[HEADER];
        ByteBuffer.wrap(header).put(FORMAT).putLong(stamp);
        return TransactionContext.newBuilder()
            .setStateMachine(this)
            .setClientRequest(request)
            .setLogData(UnsafeByteOperations.unsafeWrap(header).concat(payload))
            .build();
    }

    private long currentTerm() throws IOException
    {
        return getServer().join().getDivision(getGroupId()).getInfo().getCurrentTerm();
    }

    /**
     * Makes the next stamp choose its offset again (from everything applied by then), so a leader
     * that started stamping before its log replay finished does not keep a clock behind the log.
     */
    synchronized void rebaseClock()
    {
        clockTerm = -1;
    }

    /** The leader's cluster clock: monotonic nanos plus an offset chosen at the first stamp of a term. */
    synchronized long stamp(final long term)
    {
        final long now = System.nanoTime();
        if (term != clockTerm)
        {
            // Continue just after the latest time this node knows of: the election gap is not credited.
            final long latest = Math.max(lastAppliedStamp, lastIssuedStamp);
            clockOffset = (latest == Long.MIN_VALUE ? 0 : latest + 1) - now;
            clockTerm = term;
        }
        final long stamp = Math.max(now + clockOffset, lastIssuedStamp == Long.MIN_VALUE ? Long.MIN_VALUE : lastIssuedStamp + 1);
        lastIssuedStamp = stamp;
        return stamp;
    }

    @Override
    public CompletableFuture<Message> applyTransaction(final TransactionContext trx)
    {
        final LogEntryProto entry = trx.getLogEntry();
        final ByteBuffer data = entry.getStateMachineLogEntry().getLogData().asReadOnlyByteBuffer();
        if (data.remaining() < HEADER || data.get(data.position()) != FORMAT)
        {
            // Not ours: refuse loudly rather than guess (this is corruption or a version mismatch).
            return CompletableFuture.failedFuture(new IllegalStateException(
                "log entry " + entry.getIndex() + " is not in format " + FORMAT));
        }
        final long stamp = Math.max(data.getLong(data.position() + 1), lastAppliedStamp);
        data.position(data.position() + HEADER);
        final ByteBuffer reply = application.apply(entry.getIndex(), stamp, data.slice().asReadOnlyBuffer());
        lastAppliedStamp = stamp;
        updateLastAppliedTermIndex(entry.getTerm(), entry.getIndex());
        return CompletableFuture.completedFuture(
            Message.valueOf(reply == null || !reply.hasRemaining() ? ByteString.EMPTY : ByteString.copyFrom(reply)));
    }

    @Override
    public void notifyLeaderChanged(final RaftGroupMemberId groupMemberId, final RaftPeerId newLeaderId)
    {
        final String leader = newLeaderId == null ? null : newLeaderId.toString();
        final boolean self = nodeId.equals(leader);
        for (final LeaderListener listener : listeners)
        {
            try
            {
                listener.onLeaderChanged(leader, self);
            }
            catch (final RuntimeException e)
            {
                LOG.warn("{}: a leader listener failed", nodeId, e);
            }
        }
    }
}
