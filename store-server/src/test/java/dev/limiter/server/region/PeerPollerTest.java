package dev.limiter.server.region;

import com.google.protobuf.util.Timestamps;
import com.sun.net.httpserver.HttpServer;
import dev.limiter.protocol.policy.RegionReport;
import dev.limiter.server.testing.Await;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** Europe's poller against one node of us, played by a JDK HTTP server on 127.0.0.1 (slots of 2 s: no timeouts). */
@Timeout(20)
class PeerPollerTest
{
    private static final String TOKEN = "region-token-0123456789";
    private static final long T0 = 1_700_000_000_000L;

    private final AtomicInteger questions = new AtomicInteger();
    private final List<String> authorizations = new CopyOnWriteArrayList<>();
    /** Each answer waits for this (open unless a test closes it). */
    private volatile CountDownLatch answerWhen = new CountDownLatch(0);
    private final HttpServer us;
    private final HeardReports heard = new HeardReports(2_000, 2, 500_000, () -> T0);
    private final PeerPoller poller;

    PeerPollerTest() throws IOException
    {
        us = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        us.start();
        final String peers = "us=127.0.0.1:" + us.getAddress().getPort();
        poller = new PeerPoller(RegionConfig.parse("eu", peers, TOKEN, 2_000, 100), heard, null);
    }

    @AfterEach
    void stop()
    {
        answerWhen.countDown();
        us.stop(0);
    }

    private void answerWith(final String region)
    {
        final String json = "{\"region\":\"" + region + "\",\"leader\":true,\"at\":\"" +
            Timestamps.toString(Timestamps.fromMillis(T0)) + "\",\"sharePpm\":{\"orders\":400000},\"unknown\":1}";
        us.createContext("/region/v1/report", exchange ->
        {
            questions.incrementAndGet();
            authorizations.add(exchange.getRequestHeaders().getFirst("Authorization"));
            try
            {
                answerWhen.await(10, TimeUnit.SECONDS);
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
            }
            final byte[] body = json.getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody())
            {
                out.write(body);
            }
        });
    }

    @Test
    void aReportOfTheRegionItsAddressIsListedUnderIsHeardAskedWithTheExchangeToken()
    {
        answerWith("us");
        poller.ask();
        Await.until("us's report", Duration.ofSeconds(10), () -> heard.leaderReport("us") != null);

        final RegionReport report = heard.leaderReport("us");
        assertEquals(400_000, report.getSharePpmOrThrow("orders"), "fields it does not know are ignored");
        assertEquals(List.of("Bearer " + TOKEN), authorizations);
    }

    @Test
    void aReportThatNamesAnotherRegionThanItsAddressIsListedUnderIsNotUsed()
    {
        answerWith("ap");
        // A second question goes out only once the first answer has been dealt with.
        Await.until("a second question", Duration.ofSeconds(10), () ->
        {
            poller.ask();
            return questions.get() >= 2;
        });
        assertNull(heard.leaderReport("us"));
        assertNull(heard.leaderReport("ap"));
    }

    @Test
    void anAddressWithAQuestionStillOutIsNotAskedAgain()
    {
        answerWhen = new CountDownLatch(1);
        answerWith("us");
        poller.ask();
        Await.until("the first question", Duration.ofSeconds(10), () -> questions.get() == 1);
        poller.ask();
        poller.ask();
        answerWhen.countDown();
        Await.until("us's report", Duration.ofSeconds(10), () -> heard.leaderReport("us") != null);
        assertEquals(1, questions.get(), "asked again while the first was out: " + authorizations);
    }
}
