package dev.limiter.server.cluster;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Group commit across shards: the batches the shards of a group hand over while an entry is in
 * flight leave together as one entry; FAST-only batches keep one entry in flight, a STRICT waiter
 * two, a full entry's worth up to eight; markers go out at once and every entry is numbered in the
 * order it reached the log. The log here is a queue the test completes by hand.
 */
@Timeout(30)
class LogSubmitterTest
{
    /** An entry handed to the fake log, and the commit the test completes. */
    private record Sent(ByteBuffer entry, CompletableFuture<ByteBuffer> commit)
    {
    }

    private final LinkedBlockingQueue<Sent> log = new LinkedBlockingQueue<>();
    private final List<Integer> entryDecisions = new ArrayList<>();
    private final LogSubmitter submitter = new LogSubmitter(entry ->
    {
        final CompletableFuture<ByteBuffer> commit = new CompletableFuture<>();
        log.add(new Sent(entry, commit));
        return commit;
    }, "test-log-submit");

    {
        submitter.onDecisionEntry(decisions ->
        {
            synchronized (entryDecisions)
            {
                entryDecisions.add(decisions);
            }
        });
    }

    /** The submitter with a linger, for the tests that make one. */
    private LogSubmitter lingering;

    @AfterEach
    void close()
    {
        submitter.close();
        if (lingering != null)
        {
            lingering.close();
        }
    }

    /** A section of {@code shard} with {@code decisions} records of {@code keyBytes}-byte keys (at least a key prefix; content irrelevant here). */
    private static ShardBatch batch(final int shard, final int decisions, final boolean awaited, final int keyBytes)
    {
        final int length = DecisionsEntry.HEADER + decisions * DecisionsEntry.recordLength(keyBytes);
        final ByteBuffer section = ByteBuffer.allocate(length);
        int at = DecisionsEntry.HEADER;
        for (int i = 0; i < decisions; i++)
        {
            section.putShort(at + 14, (short)keyBytes);
            at += DecisionsEntry.recordLength(keyBytes);
        }
        DecisionsEntry.putHeader(section, shard, decisions, 0);
        return new ShardBatch(section, decisions, awaited);
    }

    private Sent next() throws InterruptedException
    {
        final Sent sent = log.poll(10, TimeUnit.SECONDS);
        assertNotNull(sent, "nothing reached the log");
        return sent;
    }

    /** Nothing more reaches the log: checked after a round trip through the submitter's thread. */
    private void nothingMoreSent() throws Exception
    {
        nothingMoreSent(submitter);
    }

    private void nothingMoreSent(final LogSubmitter from) throws Exception
    {
        from.submit(n -> ByteBuffer.allocate(0));
        final Sent probe = next();
        assertEquals(0, probe.entry().remaining(), "a decision entry went out beyond the limit");
        probe.commit().complete(ByteBuffer.allocate(0));
        assertNull(log.poll());
    }

    private static List<Integer> shards(final ByteBuffer entry)
    {
        final List<Integer> shards = new ArrayList<>();
        for (int at = entry.position(); at < entry.limit(); at = DecisionsEntry.sectionEnd(entry, at))
        {
            shards.add(DecisionsEntry.shard(entry, at));
        }
        return shards;
    }

    @Test
    void batchesHandedOverWhileAnEntryCommitsLeaveTogetherAsOneEntry() throws Exception
    {
        final ShardBatch first = batch(0, 2, false, 6);
        submitter.offer(first);
        final Sent one = next();
        assertEquals(List.of(0), shards(one.entry()));

        final ShardBatch a = batch(1, 3, false, 6);
        final ShardBatch b = batch(2, 1, false, 6);
        final ShardBatch c = batch(0, 5, false, 6);
        submitter.offer(a);
        submitter.offer(b);
        submitter.offer(c);
        nothingMoreSent(); // FAST only: one decision entry in flight
        assertEquals(ShardBatch.NOT_SUBMITTED, a.submission());

        one.commit().complete(ByteBuffer.allocate(0));
        first.committed().get(10, TimeUnit.SECONDS);
        final Sent two = next();
        assertEquals(List.of(1, 2, 0), shards(two.entry()), "the three shards' batches in one entry, in the order handed over");
        assertTrue(a.submission() > first.submission());
        assertEquals(a.submission(), b.submission());
        assertEquals(a.submission(), c.submission());
        assertFalse(a.committed().isDone());
        two.commit().complete(ByteBuffer.allocate(0));
        CompletableFuture.allOf(a.committed(), b.committed(), c.committed()).get(10, TimeUnit.SECONDS);
        synchronized (entryDecisions)
        {
            assertEquals(List.of(2, 9), entryDecisions);
        }
    }

    @Test
    void aBatchAStrictCallerWaitsForOvertakesAFastOnlyEntryButNotAnotherStrictOne() throws Exception
    {
        submitter.offer(batch(0, 1, false, 6));
        final Sent fast = next();
        submitter.offer(batch(1, 1, true, 6));
        final Sent strict = next(); // beside the FAST-only entry: its caller waits
        final ShardBatch second = batch(2, 1, true, 6);
        submitter.offer(second);
        submitter.offer(batch(0, 1, true, 6));
        nothingMoreSent(); // one entry for STRICT callers in flight at a time
        fast.commit().complete(ByteBuffer.allocate(0));
        nothingMoreSent(); // the FAST entry's slot is not theirs
        assertEquals(ShardBatch.NOT_SUBMITTED, second.submission());
        strict.commit().complete(ByteBuffer.allocate(0));
        final Sent both = next();
        assertEquals(List.of(2, 0), shards(both.entry()), "what piled up meanwhile, in one entry");
        both.commit().complete(ByteBuffer.allocate(0));
        second.committed().get(10, TimeUnit.SECONDS);
    }

    @Test
    void aFullEntrysWorthMayHaveUpToEightEntriesInFlightEachWithinTheSizeLimit() throws Exception
    {
        final int keyBytes = dev.limiter.server.table.BucketTable.MAX_KEY_LENGTH; // the longest key a record may hold
        final int perBatch = (LogSubmitter.MAX_ENTRY_BYTES / 2 - DecisionsEntry.HEADER) / DecisionsEntry.recordLength(keyBytes); // about half an entry each
        submitter.offer(batch(0, 1, false, 6));
        final Sent fast = next(); // a FAST entry in flight holds back what is less than a full entry
        for (int i = 0; i < 2 * (LogSubmitter.MAX_IN_FLIGHT_FULL + 2); i++)
        {
            submitter.offer(batch(i % 3, perBatch, false, keyBytes));
        }
        for (int i = 1; i < LogSubmitter.MAX_IN_FLIGHT_FULL; i++)
        {
            final Sent sent = next();
            assertTrue(sent.entry().remaining() <= LogSubmitter.MAX_ENTRY_BYTES, "entry of " + sent.entry().remaining() + " bytes");
            assertEquals(2, shards(sent.entry()).size(), "two half-entry batches per entry");
        }
        nothingMoreSent(); // eight in flight
        fast.commit().complete(ByteBuffer.allocate(0));
        assertEquals(2, shards(next().entry()).size());
        nothingMoreSent();
    }

    /** A submitter with a 5 ms FAST linger on a clock the test moves (closed after the test). */
    private void lingering(final AtomicLong clock)
    {
        lingering(clock, TimeUnit.MILLISECONDS.toNanos(5));
    }

    private void lingering(final AtomicLong clock, final long lingerNanos)
    {
        lingering = new LogSubmitter(entry ->
        {
            final CompletableFuture<ByteBuffer> commit = new CompletableFuture<>();
            log.add(new Sent(entry, commit));
            return commit;
        }, "test-log-linger", lingerNanos, clock::get);
    }

    @Test
    void aFastOnlyEntryWaitsUntilTheLingerHasPassedSinceThePreviousEntryLeft() throws Exception
    {
        final AtomicLong clock = new AtomicLong();
        lingering(clock);
        lingering.offer(batch(0, 1, false, 6));
        next().commit().complete(ByteBuffer.allocate(0)); // the first entry goes at once

        final ShardBatch second = batch(1, 2, false, 6);
        lingering.offer(second);
        clock.set(TimeUnit.MILLISECONDS.toNanos(4));
        lingering.offer(batch(2, 3, false, 6));
        nothingMoreSent(lingering); // committed, nothing in flight, but 4 ms < 5 ms since the first left
        assertEquals(ShardBatch.NOT_SUBMITTED, second.submission());

        clock.set(TimeUnit.MILLISECONDS.toNanos(5));
        final Sent both = next(); // the wake-up at the linger's end sends what piled up, as one entry
        assertEquals(List.of(1, 2), shards(both.entry()));
        both.commit().complete(ByteBuffer.allocate(0));
        second.committed().get(10, TimeUnit.SECONDS);

        clock.set(TimeUnit.MILLISECONDS.toNanos(11));
        lingering.offer(batch(0, 1, false, 6));
        assertEquals(List.of(0), shards(next().entry()), "a linger long past: out at once");
    }

    @Test
    void aBatchAStrictCallerWaitsForSkipsTheLingerAndTakesTheWaitingFastOnesAlong() throws Exception
    {
        final AtomicLong clock = new AtomicLong();
        lingering(clock);
        lingering.offer(batch(0, 1, false, 6));
        next().commit().complete(ByteBuffer.allocate(0));
        lingering.offer(batch(1, 1, false, 6));
        nothingMoreSent(lingering);
        final ShardBatch strict = batch(2, 1, true, 6);
        lingering.offer(strict); // the clock has not moved: no linger for a waiting caller
        final Sent sent = next();
        assertEquals(List.of(1, 2), shards(sent.entry()), "the FAST batch before it leaves with it, in order");
        sent.commit().complete(ByteBuffer.allocate(0));
        strict.committed().get(10, TimeUnit.SECONDS);
    }

    @Test
    void sendingWithoutTheLingerSendsTheWaitingFastBatchesAtOnceAndTheLingerReturnsAfterwards() throws Exception
    {
        final AtomicLong clock = new AtomicLong();
        lingering(clock, TimeUnit.MINUTES.toNanos(1)); // the linger's own wake-up stays a minute away
        lingering.offer(batch(0, 1, false, 6));
        next().commit().complete(ByteBuffer.allocate(0)); // the first entry goes at once
        final ShardBatch waiting = batch(1, 1, false, 6);
        lingering.offer(waiting);
        nothingMoreSent(lingering);

        lingering.sendWithoutLinger(); // a planned hand-over: what was answered goes to the log now
        final Sent sent = next();
        assertEquals(List.of(1), shards(sent.entry()));
        sent.commit().complete(ByteBuffer.allocate(0));
        waiting.committed().get(10, TimeUnit.SECONDS);

        lingering.offer(batch(2, 1, false, 6));
        nothingMoreSent(lingering); // once nothing waited, the linger holds FAST-only batches again
    }

    @Test
    void fastOnlyBatchesHandedOverWhileTheSubmitterLingersDoNotWakeItAndLeaveWithTheNextEntry() throws Exception
    {
        final AtomicLong clock = new AtomicLong();
        lingering(clock, TimeUnit.MINUTES.toNanos(1)); // its own wake-up at the linger's end stays a minute away
        lingering.offer(batch(0, 1, false, 6));
        next().commit().complete(ByteBuffer.allocate(0)); // the first entry goes at once
        lingering.offer(batch(1, 1, false, 6)); // wakes it: it learns it must linger
        nothingMoreSent(lingering);
        final long drains = lingering.drains();
        for (int i = 0; i < 100; i++)
        {
            lingering.offer(batch(2, 1, false, 6));
        }
        nothingMoreSent(lingering);
        assertEquals(drains, lingering.drains(), "a FAST-only hand-over woke the lingering submitter");

        final ShardBatch strict = batch(0, 1, true, 6);
        lingering.offer(strict); // a STRICT batch wakes it at once, linger or not, and takes the FAST ones along
        final Sent sent = next();
        assertEquals(102, shards(sent.entry()).size(), "the quiet hand-overs were not lost");
        sent.commit().complete(ByteBuffer.allocate(0));
        strict.committed().get(10, TimeUnit.SECONDS);
    }

    @Test
    void fastOnlyBatchesHandedOverWhileAnEntryCommitsLeaveWithTheCompletionWithoutWakingTheSubmitter() throws Exception
    {
        submitter.offer(batch(0, 1, false, 6));
        final Sent first = next();
        nothingMoreSent();
        final long drains = submitter.drains();
        for (int i = 0; i < 50; i++)
        {
            submitter.offer(batch(i % 3, 1, false, 6));
        }
        nothingMoreSent();
        assertEquals(drains, submitter.drains(), "a FAST-only hand-over woke the submitter while an entry was in flight");
        first.commit().complete(ByteBuffer.allocate(0));
        assertEquals(50, shards(next().entry()).size(), "the completion took what was handed over meanwhile");
    }

    @Test
    void aNegativeLingerIsRefused()
    {
        final IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
            () -> new LogSubmitter(entry -> new CompletableFuture<>(), "test", -1, System::nanoTime));
        assertTrue(refused.getMessage().contains("FAST linger"), refused.getMessage());
    }

    @Test
    void markersGoOutAtOnceNumberedInTheOrderEverythingReachedTheLog() throws Exception
    {
        final ShardBatch before = batch(0, 1, false, 6);
        submitter.offer(before);
        final Sent batchEntry = next();
        final ShardBatch waiting = batch(0, 1, false, 6);
        submitter.offer(waiting);
        final CompletableFuture<ByteBuffer> marker = submitter.submit(number -> ByteBuffer.allocate(8).putLong(0, number));
        final Sent markerEntry = next(); // not held back by the decision entry in flight
        final long markerNumber = markerEntry.entry().getLong(0);
        assertTrue(before.submission() < markerNumber);
        assertEquals(ShardBatch.NOT_SUBMITTED, waiting.submission(), "reaches the log after the marker: a resync replays it");
        markerEntry.commit().complete(ByteBuffer.wrap(new byte[] {7}));
        assertArrayEquals(new byte[] {7}, marker.get(10, TimeUnit.SECONDS).array());
        batchEntry.commit().complete(ByteBuffer.allocate(0));
        next();
        assertTrue(waiting.submission() > markerNumber);
    }

    @Test
    void aFailedEntryFailsEveryBatchItCarriedAndTheNextOneStillGoesOut() throws Exception
    {
        submitter.offer(batch(0, 1, false, 6));
        final Sent first = next();
        final ShardBatch a = batch(1, 1, false, 6);
        final ShardBatch b = batch(2, 1, false, 6);
        submitter.offer(a);
        submitter.offer(b);
        first.commit().completeExceptionally(new IllegalStateException("not leader"));
        final Sent second = next();
        second.commit().completeExceptionally(new IllegalStateException("not leader"));
        assertThrows(ExecutionException.class, () -> a.committed().get(10, TimeUnit.SECONDS));
        assertThrows(ExecutionException.class, () -> b.committed().get(10, TimeUnit.SECONDS));
        final ShardBatch c = batch(0, 1, false, 6);
        submitter.offer(c);
        next().commit().complete(ByteBuffer.allocate(0));
        c.committed().get(10, TimeUnit.SECONDS);
    }

    @Test
    void closingFailsWhatWasNotHandedToTheLogAndRefusesWhatComesAfter() throws Exception
    {
        submitter.offer(batch(0, 1, false, 6));
        next();
        final ShardBatch waiting = batch(1, 1, false, 6);
        submitter.offer(waiting); // an entry is in flight: handed over quietly, without waking the thread
        submitter.close();
        assertThrows(ExecutionException.class, () -> waiting.committed().get(10, TimeUnit.SECONDS));
        final ShardBatch late = batch(1, 1, false, 6);
        submitter.offer(late);
        assertThrows(ExecutionException.class, () -> late.committed().get(10, TimeUnit.SECONDS));
        assertThrows(ExecutionException.class, () -> submitter.submit(n -> ByteBuffer.allocate(1)).get(10, TimeUnit.SECONDS));
    }
}
