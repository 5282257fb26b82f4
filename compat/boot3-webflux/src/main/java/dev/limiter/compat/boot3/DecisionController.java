package dev.limiter.compat.boot3;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

import java.util.Map;

/** Answers what the limiter decided for one request of a tenant, without blocking the event loop. */
@RestController
class DecisionController
{
    private final LimiterClient client;

    DecisionController(final LimiterClient client)
    {
        this.client = client;
    }

    @GetMapping("/decide")
    Mono<Map<String, Object>> decide(@RequestParam("tenant") final String tenant)
    {
        return Mono.fromFuture(() -> client.acquire(Descriptor.of(tenant, "/decide")))
            .map(DecisionController::describe);
    }

    private static Map<String, Object> describe(final Decision decision)
    {
        return Map.of("allowed", decision.allowed(), "degraded", decision.degraded(), "reason",
            String.valueOf(decision.reason()), "remaining", decision.remaining());
    }
}
