package dev.limiter.example;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;

/**
 * An orders service: the starter puts the limiter's WebFilter in front of it ({@code limiter.*} in
 * application.properties).
 */
@SpringBootApplication
@RestController
public class OrdersApplication
{
    @GetMapping("/v1/orders/{id}")
    reactor.core.publisher.Mono<String> order(@PathVariable("id") final String id)
    {
        return reactor.core.publisher.Mono.just("order " + id + "\n");
    }

    public static void main(final String[] args)
    {
        SpringApplication.run(OrdersApplication.class, args);
    }
}
