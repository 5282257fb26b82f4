package dev.limiter.gateway;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.InvalidDescriptorException;
import dev.limiter.client.LimiterClient;
import dev.limiter.client.LimiterException;
import dev.limiter.client.RateLimitHeaders;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.cloud.gateway.filter.ratelimit.AbstractRateLimiter;
import org.springframework.cloud.gateway.support.ConfigurationService;
import reactor.core.publisher.Mono;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletionException;

/**
 * A {@code RateLimiter} for Spring Cloud Gateway's {@code RequestRateLimiter} filter that takes
 * {@code RedisRateLimiter}'s place: each request is asked of the limiter's nodes as the descriptor
 * tenant = the route's KeyResolver key, route = {@code /} + the route id. The limits themselves are
 * the cluster's policies (a policy selecting that route), not route arguments: RedisRateLimiter's
 * {@code replenishRate} and {@code burstCapacity} become a policy's {@code rate} (per {@code 1s}) and
 * {@code burst}; {@code requestedTokens} stays a route argument
 * ({@code limiter-rate-limiter.requested-tokens}), the cost of each request.
 *
 * <p>Answers carry RedisRateLimiter's headers ({@code X-RateLimit-Remaining},
 * {@code X-RateLimit-Burst-Capacity}, {@code X-RateLimit-Requested-Tokens}; not
 * {@code X-RateLimit-Replenish-Rate}, as a policy's period need not be a second) and the IETF
 * {@code RateLimit-Policy} and {@code RateLimit} headers, with {@code Retry-After} on a refusal. When
 * no node answers, the SDK decides by the matched policy's failure mode (open: allowed; closed:
 * refused). A key the limiter cannot use, or a call that got no decision at all, is refused: a
 * request is never let through unlimited because of what it carried.
 */
public class LimiterRateLimiter extends AbstractRateLimiter<LimiterRateLimiter.Config>
{
    /** The prefix of this limiter's route arguments, as {@code redis-rate-limiter} is RedisRateLimiter's. */
    public static final String CONFIGURATION_PROPERTY_NAME = "limiter-rate-limiter";
    public static final String REMAINING_HEADER = "X-RateLimit-Remaining";
    public static final String BURST_CAPACITY_HEADER = "X-RateLimit-Burst-Capacity";
    public static final String REQUESTED_TOKENS_HEADER = "X-RateLimit-Requested-Tokens";

    private static final Logger LOG = LoggerFactory.getLogger(LimiterRateLimiter.class);

    private final LimiterClient client;
    private final Config defaults = new Config();

    public LimiterRateLimiter(final LimiterClient client, final ConfigurationService configurationService)
    {
        super(Config.class, CONFIGURATION_PROPERTY_NAME, configurationService);
        this.client = client;
    }

    @Override
    public Mono<Response> isAllowed(final String routeId, final String id)
    {
        final int cost = getConfig().getOrDefault(routeId, defaults).getRequestedTokens();
        final Descriptor descriptor;
        try
        {
            descriptor = Descriptor.builder().tenant(id).route("/" + routeId).build();
        }
        catch (final InvalidDescriptorException e)
        {
            return Mono.just(refused(cost, "the key or route cannot be used: " + e.getMessage()));
        }
        return Mono.fromFuture(() -> client.acquire(descriptor, cost))
            .map(decision -> answer(decision, cost))
            .onErrorResume(e ->
            {
                final Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
                if (cause instanceof LimiterException)
                {
                    return Mono.just(refused(cost, cause.getMessage()));
                }
                return Mono.error(cause);
            });
    }

    private static Response answer(final Decision decision, final int cost)
    {
        final Map<String, String> headers = new LinkedHashMap<>();
        headers.put(REMAINING_HEADER, Long.toString(Math.max(0, decision.remaining())));
        headers.put(BURST_CAPACITY_HEADER, Long.toString(decision.limit()));
        headers.put(REQUESTED_TOKENS_HEADER, Integer.toString(cost));
        headers.putAll(RateLimitHeaders.of(decision));
        return new Response(decision.allowed(), headers);
    }

    private static Response refused(final int cost, final String why)
    {
        LOG.debug("refused without a decision: {}", why);
        final Map<String, String> headers = new LinkedHashMap<>();
        headers.put(REMAINING_HEADER, "0");
        headers.put(REQUESTED_TOKENS_HEADER, Integer.toString(cost));
        headers.put("Retry-After", "1");
        return new Response(false, headers);
    }

    /** A route's arguments under {@code limiter-rate-limiter.*}. */
    public static class Config
    {
        /** Tokens each request of the route costs (RedisRateLimiter's requestedTokens; default 1). */
        private int requestedTokens = 1;

        public int getRequestedTokens()
        {
            return requestedTokens;
        }

        public Config setRequestedTokens(final int requestedTokens)
        {
            if (requestedTokens < 1)
            {
                throw new IllegalArgumentException("limiter-rate-limiter.requested-tokens must be at least 1, was " +
                    requestedTokens);
            }
            this.requestedTokens = requestedTokens;
            return this;
        }
    }
}
