package dev.limiter.server.testing;

import dev.limiter.server.StoreServer;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * Closes a test cluster's members at the same time. Closing a member takes about a second however
 * little it holds: each Raft group's log worker polls its queue with a one-second timeout and Ratis
 * waits for it to notice the close. One after the other, a three-member cluster took three seconds
 * to stop after every test. A store node is halted ({@link StoreServer#halt()}): the test is over,
 * and members stopping together cannot hand their leads to one another.
 */
public final class ClosingTogether
{
    private ClosingTogether()
    {
    }

    /** Closes every one of {@code members} on a thread of its own and returns once all are closed. */
    public static void close(final Collection<? extends AutoCloseable> members)
    {
        final List<Thread> closing = new ArrayList<>();
        final List<Throwable> failures = new ArrayList<>();
        for (final AutoCloseable member : members)
        {
            final Thread thread = new Thread(() ->
            {
                try
                {
                    if (member instanceof StoreServer node)
                    {
                        node.halt();
                    }
                    else
                    {
                        member.close();
                    }
                }
                catch (final Exception | Error e)
                {
                    synchronized (failures)
                    {
                        failures.add(e);
                    }
                }
            }, "closing-" + member);
            thread.start();
            closing.add(thread);
        }
        for (final Thread thread : closing)
        {
            try
            {
                thread.join();
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while closing the test cluster", e);
            }
        }
        if (!failures.isEmpty())
        {
            final IllegalStateException failed = new IllegalStateException("closing " + failures.size()
                + " member(s) failed");
            failures.forEach(failed::addSuppressed);
            throw failed;
        }
    }
}
