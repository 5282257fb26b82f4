package dev.limiter.client;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A new client's wait to be ready, bounded by its startup timeout: for the first attempt of every
 * connection, then for one to be open and (when following policies) for the policy set, then for
 * a PING round trip on each open connection, so that the first real calls find the code paths
 * loaded and the connections warm. A cluster that is down at start costs the whole wait, once.
 */
final class Startup
{
    private static final Logger LOG = LoggerFactory.getLogger(Startup.class);

    private final ClientContext context;

    Startup(final ClientContext context)
    {
        this.context = context;
    }

    void await(final CountDownLatch attempted, final boolean needPolicies, final Duration timeout)
    {
        final ConnectionSet connections = context.connections;
        final long end = System.nanoTime() + timeout.toNanos();
        try
        {
            attempted.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
            while (System.nanoTime() - end < 0 && (connections.pick() == null || needPolicies
                && context.policies.current().isEmpty()))
            {
                Thread.sleep(2);
            }
            final CompletableFuture<Void> warm = connections.pick() == null ? CompletableFuture.completedFuture(null)
                : pingAll(end);
            if (context.local != null)
            {
                context.local.prepare(); // here, not on the deadline timer at the first local decision
            }
            if (context.blocks != null)
            {
                context.blocks.prepare(); // here, not on the first call's thread
            }
            warm.get(Math.max(0, end - System.nanoTime()), TimeUnit.NANOSECONDS);
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
        catch (final ExecutionException | TimeoutException notReady)
        {
            LOG.warn("limiter client not ready within {} (no node answered a PING): " +
                "calls decide locally or fail until one does",
                timeout);
        }
        if (connections.pick() == null)
        {
            LOG.warn("limiter client: no node of {} reachable within {}; " +
                "calls decide locally (from a stored policy set) or fail " +
                "until one is", connections.endpoints(), timeout);
        }
    }

    /** Round-trips a PING on every open connection; completes when all answered. */
    CompletableFuture<Void> pingAll(final long deadlineNanos)
    {
        final List<CompletableFuture<Void>> pings = context.connections.pingOpen(deadlineNanos);
        if (pings.isEmpty())
        {
            return CompletableFuture.failedFuture(new LimiterUnavailableException("no open connection to " +
                context.connections.endpoints()));
        }
        return CompletableFuture.allOf(pings.toArray(new CompletableFuture[0]));
    }
}
