package dev.limiter.cli.pilot;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One phase's traffic: the trace played open loop through the SDK in front of the sample backend.
 * Each request asks the limiter first; an allowed one goes to the backend, a refused one does not.
 * Everything is counted per tenant ({@link TenantTally}) beside the backend's own counts.
 */
final class PhaseTraffic
{
    /** One phase's figures. */
    record Result(String phase, double seconds, Map<String, TenantTally> tenants, BackendStats backend,
        TracePlayer.Played played)
    {
    }

    private final Trace trace;
    private final List<String> servers;
    private final SampleBackend backend;
    private final HttpClient http;

    PhaseTraffic(final Trace trace, final List<String> servers, final SampleBackend backend, final HttpClient http)
    {
        this.trace = trace;
        this.servers = servers;
        this.backend = backend;
        this.http = http;
    }

    /** Plays the trace compressed to {@code seconds} and waits for its last answers (at most 10 s). */
    Result run(final String phase, final double seconds, final AtomicBoolean stop)
    {
        final Map<String, TenantTally> tallies = new LinkedHashMap<>();
        final ModelBucket[] models = new ModelBucket[trace.tenants().size()];
        for (int t = 0; t < trace.tenants().size(); t++)
        {
            tallies.put(trace.tenants().get(t).id(), new TenantTally());
            models[t] = new ModelBucket(trace.policy().rate(), trace.policy().burst());
        }
        final ConcurrentLinkedQueue<CompletableFuture<?>> pending = new ConcurrentLinkedQueue<>();
        final URI target = URI.create(backend.uri() + trace.route());
        backend.nextPhase(); // what came before this phase (warm-up, drills) is not this phase's
        final TracePlayer.Played played;
        try (LimiterClient client = LimiterClient.builder().endpoints(servers.toArray(String[]::new))
            .deadline(Duration.ofMillis(500)).build())
        {
            final Trace.Schedule schedule = trace.schedule((long)(seconds * 1e9));
            played = new TracePlayer(TracePlayer.Pacer.SYSTEM).play(schedule, (index, due) ->
            {
                final String tenant = trace.tenants().get(index).id();
                final TenantTally tally = tallies.get(tenant);
                final boolean modelAllows = models[index].take(due);
                synchronized (tally)
                {
                    tally.offered++;
                    if (!modelAllows)
                    {
                        tally.modelRefused++;
                    }
                }
                final CompletableFuture<Decision> call;
                try
                {
                    call = client.acquire(Descriptor.of(tenant, trace.route()), 1);
                }
                catch (final RuntimeException e)
                {
                    tally.limiterFailed(); // no node connected: the SDK refused to take the call
                    return;
                }
                pending.add(call.handle((decision, error) ->
                {
                    if (error != null)
                    {
                        tally.limiterFailed();
                        return null;
                    }
                    decided(tenant, tally, decision, System.nanoTime() - due, !modelAllows, target, pending);
                    return null;
                }));
            }, stop);
            awaitAll(pending, System.nanoTime() + TimeUnit.SECONDS.toNanos(10));
        }
        return new Result(phase, seconds, tallies, backend.nextPhase(), played);
    }

    private void decided(final String tenant, final TenantTally tally, final Decision decision, final long nanos,
                         final boolean modelRefused, final URI target,
                             final ConcurrentLinkedQueue<CompletableFuture<?>> pending)
    {
        tally.decided(decision.allowed(), decision.degraded(), nanos, decision.policyId(), decision.policyVersion());
        if (!decision.allowed())
        {
            if (trace.wellBehaved(tenant))
            {
                tally.rejected(new TenantTally.Rejection(System.currentTimeMillis(), decision.reason().name(),
                    decision.degraded(), decision.policyId(), decision.policyVersion(), modelRefused));
            }
            return;
        }
        final long sent = System.nanoTime();
        final HttpRequest request = HttpRequest.newBuilder(target).timeout(Duration.ofSeconds(2))
            .header(SampleBackend.TENANT_HEADER, tenant).GET().build();
        pending.add(http.sendAsync(request, HttpResponse.BodyHandlers.discarding()).handle((response, error) ->
        {
            if (error != null)
            {
                tally.backendUnreachable();
            }
            else
            {
                tally.backendAnswered(response.statusCode(), System.nanoTime() - sent);
            }
            return null;
        }));
    }

    /** Waits for every call and every backend request started, the ones started while waiting too. */
    private static void awaitAll(final ConcurrentLinkedQueue<CompletableFuture<?>> pending, final long deadline)
    {
        CompletableFuture<?> next;
        while ((next = pending.poll()) != null)
        {
            final long left = deadline - System.nanoTime();
            if (left <= 0)
            {
                return;
            }
            try
            {
                next.get(left, TimeUnit.NANOSECONDS);
            }
            catch (final Exception e)
            {
                // counted where it completed
            }
        }
    }
}
