package dev.limiter.cli.pilot;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The sample backend's overload behaviour: a bounded queue refused at once, a long wait answered 503, latency rising
 * with depth.
 */
@Timeout(30)
class SampleBackendTest
{
    private final HttpClient http = HttpClient.newHttpClient();

    private List<HttpResponse<String>> sendAtOnce(final SampleBackend backend, final int count,
        final long gapMillis) throws Exception
    {
        final List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
        for (int i = 0; i < count; i++)
        {
            calls.add(http.sendAsync(HttpRequest.newBuilder(URI.create(backend.uri() + "/pilot/orders"))
                .header(SampleBackend.TENANT_HEADER, "acme").build(), HttpResponse.BodyHandlers.ofString()));
            Thread.sleep(gapMillis); // arrivals in this order, gapMillis apart: pacing, not a wait
        }
        final List<HttpResponse<String>> answers = new ArrayList<>();
        for (final CompletableFuture<HttpResponse<String>> call : calls)
        {
            answers.add(call.get());
        }
        return answers;
    }

    @Test
    void requestsBeyondTheWorkersAndTheQueueAreRefusedAtOnceAndLatencyRisesWithQueueDepth() throws Exception
    {
        // One worker, 400 ms a request, two may wait: of six requests arriving together three are served.
        try (SampleBackend backend = SampleBackend.start(new SampleBackend.Settings(1, 400, 2, 10_000)))
        {
            final List<HttpResponse<String>> answers = sendAtOnce(backend, 6, 50);
            assertEquals(3, answers.stream().filter(a -> a.statusCode() == 200).count(), answers.toString());
            assertEquals(3, answers.stream().filter(a -> a.statusCode() == 503
                && a.body().contains("queue full")).count(), answers.toString());
            final BackendStats stats = backend.nextPhase();
            final BackendStats.Row acme = stats.byTenant().get("acme");
            assertEquals(6, acme.requests());
            assertEquals(3, acme.errors());
            // The third served request waited for the two before it: about 1.1 s from arrival to answer.
            assertTrue(acme.p99Millis() >= 1_000, "p99 " + acme.p99Millis());
            assertEquals(2, stats.maxQueueDepth(), "one in service, two waiting");
            assertEquals(0, backend.nextPhase().total().requests(), "a new phase starts empty");
        }
    }

    @Test
    void aRequestThatWaitedLongerThanMaxWaitIsAnswered503WithoutBeingServed() throws Exception
    {
        try (SampleBackend backend = SampleBackend.start(new SampleBackend.Settings(1, 300, 10, 100)))
        {
            final List<HttpResponse<String>> answers = sendAtOnce(backend, 3, 10);
            assertEquals(200, answers.get(0).statusCode(), answers.toString());
            assertEquals(2, answers.stream().filter(a -> a.statusCode() == 503
                && a.body().contains("waited too long")).count(), answers.toString());
            assertEquals(2, backend.nextPhase().total().errors());
        }
    }

    @Test
    void settingsOutOfRangeAreRefusedNamingTheField()
    {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> new SampleBackend.Settings(0, 10, 1, 1));
        assertEquals("backend.workers must be 1 to 64, was 0", e.getMessage());
        assertEquals(200.0, new SampleBackend.Settings(2, 10, 0, 1).capacityPerSecond());
    }
}
