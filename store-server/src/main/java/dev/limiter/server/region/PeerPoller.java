package dev.limiter.server.region;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.limiter.protocol.policy.RegionReport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;

/**
 * Asks every listed node of the other regions (and this region's other nodes, when listed) for its
 * report ({@code GET /region/v1/report} with the exchange token) and keeps what each answers in
 * {@link HeardReports}. One question per address at a time; a question is bounded in time (a slot to
 * the headers, two to the end of the body) and in size ({@link ReportBody#MAX_BYTES}). A report
 * that fails, is refused or names another region than the one its address is listed under is not
 * used, and the reason is logged.
 */
final class PeerPoller
{
    private static final Logger LOG = LoggerFactory.getLogger(PeerPoller.class);

    private final RegionConfig config;
    private final HeardReports heard;
    private final String scheme;
    private final HttpClient http;
    /** Addresses with a question still out. */
    private final Set<String> inFlight = ConcurrentHashMap.newKeySet();

    /**
     * @param tls the node's TLS (its certificate as the client's, its CA to trust the other regions'
     *            admin ports, which then speak HTTPS too), or null: plain HTTP
     */
    PeerPoller(final RegionConfig config, final HeardReports heard, final SSLContext tls)
    {
        this.config = config;
        this.heard = heard;
        this.scheme = tls == null ? "http://" : "https://";
        final HttpClient.Builder client =
            HttpClient.newBuilder().connectTimeout(Duration.ofMillis(config.slotMillis()));
        this.http = (tls == null ? client : client.sslContext(tls)).build();
    }

    /** Asks every listed address whose previous question has been answered (or failed). */
    void ask()
    {
        for (final Map.Entry<String, List<String>> region : config.peers().entrySet())
        {
            for (final String address : region.getValue())
            {
                if (inFlight.add(address)) // else the previous question is still out
                {
                    ask(region.getKey(), address);
                }
            }
        }
    }

    private void ask(final String region, final String address)
    {
        final CompletableFuture<HttpResponse<String>> answer;
        try
        {
            final HttpRequest request = HttpRequest.newBuilder(URI.create(scheme + address + "/region/v1/report"))
                .timeout(Duration.ofMillis(config.slotMillis())).header("Authorization", "Bearer " + config.token())
                .GET().build();
            // The request timeout ends with the headers; a peer that stalls mid-body must not hold its slot forever.
            answer = http.sendAsync(request, info -> new ReportBody(ReportBody.MAX_BYTES))
                .orTimeout(2 * config.slotMillis(), TimeUnit.MILLISECONDS);
        }
        catch (final RuntimeException e)
        {
            inFlight.remove(address);
            LOG.warn("region {}: cannot ask {}: {}", config.region(), address, e.toString());
            return;
        }
        answer.whenComplete((response, failure) ->
        {
            try
            {
                take(region, address, response, failure);
            }
            finally
            {
                inFlight.remove(address); // only now: the answer is used (or not) before the next question
            }
        });
    }

    /** Uses one answer: a report of the region its address is listed under is heard; anything else is dropped. */
    private void take(final String region, final String address, final HttpResponse<String> response,
        final Throwable failure)
    {
        if (failure != null || response.statusCode() != 200)
        {
            warnFailed(address, response, failure);
            return;
        }
        try
        {
            final RegionReport report = ReportBody.parse(response.body());
            if (!report.getRegion().equals(region))
            {
                LOG.warn("region {}: {} says it is in region '{}', configured as '{}'; its report is not used",
                    config.region(), address, report.getRegion(), region);
                return;
            }
            heard.heard(address, region, report);
        }
        catch (final InvalidProtocolBufferException | RuntimeException e)
        {
            LOG.warn("region {}: unreadable report from {}: {}", config.region(), address, e.getMessage());
        }
    }

    /** Says what to check where a question failed in a way an operator can mend (a peer merely down is not logged). */
    private void warnFailed(final String address, final HttpResponse<String> response, final Throwable failure)
    {
        if (failure != null && causedBy(failure, ReportBody.TooLarge.class))
        {
            LOG.warn("region {}: {} sent a report over {} bytes; not used", config.region(), address,
                ReportBody.MAX_BYTES);
        }
        if (failure != null && causedBy(failure, SSLException.class))
        {
            LOG.warn("region {}: TLS with {} failed ({}): do the regions' certificates name the addresses in " +
                "--region-peers, and does --tls-ca trust them?", config.region(), address, failure.getMessage());
        }
        if (response != null && response.statusCode() == 401)
        {
            LOG.warn("region {}: {} refused the exchange token (is --region-token the same in every region?)",
                config.region(), address);
        }
    }

    private static boolean causedBy(final Throwable failure, final Class<? extends Throwable> kind)
    {
        for (Throwable t = failure; t != null; t = t.getCause())
        {
            if (kind.isInstance(t))
            {
                return true;
            }
        }
        return false;
    }
}
