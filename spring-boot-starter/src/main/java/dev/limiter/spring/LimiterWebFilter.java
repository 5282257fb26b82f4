package dev.limiter.spring;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.InvalidDescriptorException;
import dev.limiter.client.LimiterClient;
import dev.limiter.client.LimiterException;
import dev.limiter.client.LimiterRequestException;
import dev.limiter.client.RateLimitHeaders;
import dev.limiter.protocol.ReasonCode;
import org.springframework.core.Ordered;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CompletionException;

/**
 * The servlet filter's answers for WebFlux, without blocking an event loop: each request is asked
 * of the limiter ({@link LimiterClient#acquire}); allowed ones go on with the RateLimit headers,
 * refused ones get 429 with Retry-After, 503 when the cluster is unreachable and the policy fails
 * closed (or no decision could be had), 400 when a field of the request cannot be used or a policy
 * needs one it lacks. Bodies are one line of text/plain.
 */
public final class LimiterWebFilter implements WebFilter, Ordered
{
    /** Early, so that a refused request costs the application nothing; after Spring Security's order (-100). */
    public static final int ORDER = -50;

    private final LimiterClient client;
    private final ExchangeDescriptors descriptors;
    private final int cost;

    public LimiterWebFilter(final LimiterClient client, final ExchangeDescriptors descriptors, final int cost)
    {
        if (client == null || descriptors == null)
        {
            throw new IllegalArgumentException("a LimiterWebFilter needs a client and an ExchangeDescriptors rule");
        }
        if (cost < 1)
        {
            throw new IllegalArgumentException("a request costs at least 1 token, was " + cost);
        }
        this.client = client;
        this.descriptors = descriptors;
        this.cost = cost;
    }

    @Override
    public int getOrder()
    {
        return ORDER;
    }

    @Override
    public Mono<Void> filter(final ServerWebExchange exchange, final WebFilterChain chain)
    {
        final Descriptor descriptor;
        try
        {
            descriptor = descriptors.describe(exchange);
        }
        catch (final InvalidDescriptorException e)
        {
            return respond(exchange, HttpStatus.BAD_REQUEST, Map.of(), "request refused by the rate limiter: " +
                e.getMessage());
        }
        if (descriptor == null)
        {
            return chain.filter(exchange);
        }
        return Mono.fromFuture(() -> client.acquire(descriptor, cost))
            .flatMap(decision -> answer(exchange, chain, decision))
            .onErrorResume(e -> failed(exchange, e instanceof CompletionException && e.getCause() != null ?
                e.getCause() : e));
    }

    private Mono<Void> answer(final ServerWebExchange exchange, final WebFilterChain chain, final Decision decision)
    {
        final Map<String, String> headers = RateLimitHeaders.of(decision);
        if (decision.allowed())
        {
            headers.forEach(exchange.getResponse().getHeaders()::set);
            return chain.filter(exchange);
        }
        if (decision.reason() == ReasonCode.CLUSTER_UNAVAILABLE)
        {
            return respond(exchange, HttpStatus.SERVICE_UNAVAILABLE, Map.of("Retry-After", "1"),
                "the rate limiter is unreachable and policy " + decision.policyId() +
                " refuses requests then (fail-closed)");
        }
        final long retryAfter = RateLimitHeaders.retryAfterSeconds(decision);
        return respond(exchange, HttpStatus.TOO_MANY_REQUESTS, headers, "rate limited by policy " +
            decision.policyId() + (retryAfter > 0 ? "; retry after " + retryAfter + " s" :
            "; this request can never fit its limit"));
    }

    private static Mono<Void> failed(final ServerWebExchange exchange, final Throwable e)
    {
        if (e instanceof LimiterRequestException)
        {
            // The node refused the request itself (a policy needs a field this request lacks): retrying cannot help.
            return respond(exchange, HttpStatus.BAD_REQUEST, Map.of(), "request refused by the rate limiter: " +
                e.getMessage());
        }
        if (e instanceof LimiterException)
        {
            return respond(exchange, HttpStatus.SERVICE_UNAVAILABLE, Map.of("Retry-After", "1"),
                "the rate limiter could not decide: " + e.getMessage());
        }
        return Mono.error(e);
    }

    private static Mono<Void> respond(final ServerWebExchange exchange, final HttpStatus status,
        final Map<String, String> headers, final String message)
    {
        final ServerHttpResponse response = exchange.getResponse();
        response.setStatusCode(status);
        headers.forEach(response.getHeaders()::set);
        response.getHeaders().setContentType(new MediaType("text", "plain", StandardCharsets.UTF_8));
        final DataBuffer body = response.bufferFactory().wrap((message + "\n").getBytes(StandardCharsets.UTF_8));
        return response.writeWith(Mono.just(body));
    }
}
