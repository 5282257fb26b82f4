package dev.limiter.spring;

import dev.limiter.client.ClientStats;
import dev.limiter.client.LimiterClient;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * What both Boot lines' health indicators report: whether a node answered a PING just now, within
 * {@code limiter.health.timeout}; if none did, the SDK is degraded (calls are decided locally, by
 * their policies' failure modes). Degraded is a status of its own, {@value #DEGRADED}, which Boot's
 * default status order leaves out of the application's overall status: an unreachable limiter does
 * not take the application out of its load balancer.
 */
final class LimiterHealth
{
    static final String DEGRADED = "DEGRADED";

    private LimiterHealth()
    {
    }

    /** The check's outcome: a node answered, and the details to show. */
    record Report(boolean nodeAnswered, Map<String, Object> details)
    {
    }

    static Report check(final LimiterClient client, final Duration timeout)
    {
        final Map<String, Object> details = new LinkedHashMap<>();
        boolean answered;
        try
        {
            client.ping().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            answered = true;
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            answered = false;
            details.put("error", "interrupted");
        }
        catch (final ExecutionException | TimeoutException e)
        {
            answered = false;
            details.put("error", e instanceof TimeoutException ? "no node answered a PING within " + timeout :
                String.valueOf(e.getCause()));
        }
        final ClientStats stats = client.stats();
        details.put("openConnections", stats.openConnections());
        details.put("openCircuits", stats.openCircuits());
        details.put("degradedTime", stats.degradedTime().toString());
        details.put("policyVersion", client.policies().version());
        return new Report(answered, details);
    }
}
