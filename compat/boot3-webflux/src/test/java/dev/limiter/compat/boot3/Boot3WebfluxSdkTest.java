package dev.limiter.compat.boot3;

import dev.limiter.testnodes.NodeJvm;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.core.ParameterizedTypeReference;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.WebTestClient;

import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 49's failing case: a Spring Boot 3.5.7 WebFlux application, Netty 4.1 on its classpath, that
 * only adds {@code dev.limiter:limiter-client}. It must start, and its calls must be decided by a real
 * node (a JVM of its own: the node needs Netty 4.2).
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@Timeout(60)
class Boot3WebfluxSdkTest
{
    /** 20 tokens and no refill within the test: the node allows exactly 20 of a tenant's calls. */
    private static final String POLICIES = """
        {
          "version": 1,
          "defaultPolicy": {
            "id": "default", "rate": 1, "period": "3600s", "burst": 20, "scope": "TENANT",
            "owner": "compat-test", "reason": "exactly 20 calls per tenant"
          },
          "policies": []
        }
        """;

    private static NodeJvm node;

    @Autowired
    private WebTestClient web;

    @BeforeAll
    static void startNode() throws Exception
    {
        node = NodeJvm.startWithPolicies(POLICIES, Duration.ofSeconds(30));
    }

    @AfterAll
    static void stopNode() throws Exception
    {
        if (node != null)
        {
            node.close();
        }
    }

    @DynamicPropertySource
    static void limiterProperties(final DynamicPropertyRegistry registry)
    {
        registry.add("limiter.endpoints", () -> node.address());
        // A cold JVM on a shared 2-core machine: the first calls can take longer than the SDK's default 20 ms.
        registry.add("limiter.deadline", () -> "2s");
    }

    @Test
    void theHostHasNetty41AndNoProtobuf() throws Exception
    {
        final String nettyCommon = io.netty.util.Version.identify().get("netty-common").artifactVersion();
        assertTrue(nettyCommon.startsWith("4.1."), "Boot 3.5.7's Netty is 4.1, found " + nettyCommon);
        assertThrows(ClassNotFoundException.class, () -> Class.forName("io.netty.channel.MultiThreadIoEventLoopGroup"));
        assertThrows(ClassNotFoundException.class, () -> Class.forName("com.google.protobuf.Message"),
            "the SDK must bring no protobuf into the host");
    }

    @Test
    void thirtyCallsAreAllDecidedByTheNodeWhichAllowsExactlyTheBurst()
    {
        int allowed = 0;
        for (int i = 0; i < 30; i++)
        {
            final Map<String, Object> decision = web.get().uri("/decide?tenant=boot3").exchange()
                .expectStatus().isOk().expectBody(new ParameterizedTypeReference<Map<String, Object>>() { })
                .returnResult().getResponseBody();
            assertNotNull(decision);
            assertEquals(false, decision.get("degraded"), "call " + i + " was decided locally: " + decision);
            if (Boolean.TRUE.equals(decision.get("allowed")))
            {
                allowed++;
            }
            else
            {
                assertEquals("RATE_LIMITED", decision.get("reason"), "call " + i + ": " + decision);
            }
        }
        assertEquals(20, allowed, "the node's bucket holds 20 tokens and refills none within the test");
    }
}
