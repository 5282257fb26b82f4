package dev.limiter.server.admin;

import dev.limiter.protocol.policy.HotKeyReport;
import dev.limiter.server.SampledRejections;
import dev.limiter.server.engine.RejectedDecisions;
import dev.limiter.server.metrics.ServerMetrics;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The admin port's endpoints outside /v1, answered without a socket for a node that is live but not ready. */
class OpenEndpointsTest
{
    private final OpenEndpoints open = new OpenEndpoints(new ServerMetrics(), new NodeStatus()
    {
        @Override
        public String statusJson()
        {
            return "{\"id\":\"n1\"}";
        }

        @Override
        public boolean healthy()
        {
            return true;
        }

        @Override
        public Readiness readiness()
        {
            return new Readiness(List.of("Raft group 0 has no known leader"));
        }

        @Override
        public String healthJson()
        {
            return "{\"status\":\"UP\"}";
        }

        @Override
        public HotKeyReport hotKeys()
        {
            return HotKeyReport.getDefaultInstance();
        }

        @Override
        public RejectionSamples rejections()
        {
            return new SampledRejections("n1", new RejectedDecisions());
        }
    });

    private FullHttpResponse get(final HttpMethod method, final String path)
    {
        return open.answer(new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, method, path, Unpooled.EMPTY_BUFFER), path);
    }

    private static String body(final FullHttpResponse response)
    {
        return response.content().toString(StandardCharsets.UTF_8);
    }

    @Test
    void aLiveNodeThatIsNotReadyIsUpOnHealthAnd503OnReadyWithItsReasons()
    {
        final FullHttpResponse live = get(HttpMethod.GET, "/health/live");
        assertEquals(200, live.status().code());
        assertEquals("{\"status\":\"UP\"}\n", body(live));
        assertEquals(200, get(HttpMethod.HEAD, "/health").status().code());
        final FullHttpResponse ready = get(HttpMethod.GET, "/health/ready");
        assertEquals(503, ready.status().code());
        assertEquals("{\"status\":\"NOT_READY\",\"reasons\":[\"Raft group 0 has no known leader\"]}\n", body(ready));
        assertEquals("application/json", ready.headers().get(HttpHeaderNames.CONTENT_TYPE));
        assertEquals("{\"id\":\"n1\"}\n", body(get(HttpMethod.GET, "/status")));
    }

    @Test
    void metricsArePrometheusText()
    {
        final FullHttpResponse metrics = get(HttpMethod.GET, "/metrics");
        assertEquals(200, metrics.status().code());
        assertEquals("text/plain; version=0.0.4; charset=utf-8", metrics.headers().get(HttpHeaderNames.CONTENT_TYPE));
        assertEquals(metrics.content().readableBytes(), metrics.headers().getInt(HttpHeaderNames.CONTENT_LENGTH));
    }

    @Test
    void aNodeOfNoRegionAnswersTheRegionReport404SayingSo()
    {
        final FullHttpResponse report = get(HttpMethod.GET, "/region/v1/report");
        assertEquals(404, report.status().code());
        assertTrue(body(report).contains("this node belongs to no region"), body(report));
    }

    @Test
    void anotherMethodIs405AndAnUnknownPath404ListingTheEndpoints()
    {
        final FullHttpResponse post = get(HttpMethod.POST, "/metrics");
        assertEquals(405, post.status().code());
        assertEquals("GET, HEAD", post.headers().get(HttpHeaderNames.ALLOW));
        final FullHttpResponse unknown = get(HttpMethod.GET, "/nothing");
        assertEquals(404, unknown.status().code());
        assertEquals("no such endpoint: /nothing (try /metrics, /health, /health/live, /health/ready, /status or " +
            "/region/v1/report)\n", body(unknown));
    }
}
