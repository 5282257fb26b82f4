package dev.limiter.compat.boot3;

import dev.limiter.client.LimiterClient;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

import java.time.Duration;

/** A WebFlux application that builds a {@link LimiterClient} itself, as a service with only the SDK would. */
@SpringBootApplication
public class SdkApplication
{
    @Bean(destroyMethod = "close")
    LimiterClient limiterClient(@Value("${limiter.endpoints}") final String endpoints,
        @Value("${limiter.deadline:20ms}") final Duration deadline)
    {
        return LimiterClient.builder().endpoints(endpoints.split(",")).deadline(deadline).build();
    }

    public static void main(final String[] args)
    {
        SpringApplication.run(SdkApplication.class, args);
    }
}
