package dev.limiter.envoy.api;

import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An HTTP request must arrive whole within the deadline from its first byte; idle time between requests does not count.
 */
class RequestDeadlineTest
{
    private final RequestDeadline deadline = new RequestDeadline(Duration.ofSeconds(10));
    private final EmbeddedChannel channel = new EmbeddedChannel(deadline);

    private void receive(final String bytes)
    {
        channel.writeInbound(Unpooled.copiedBuffer(bytes, java.nio.charset.StandardCharsets.US_ASCII));
        channel.releaseInbound();
    }

    private void advanceSeconds(final long seconds)
    {
        channel.advanceTimeBy(seconds, TimeUnit.SECONDS);
        channel.runScheduledPendingTasks();
    }

    @Test
    void aRequestTrickledOutOverTheDeadlineClosesItsConnection()
    {
        channel.freezeTime();
        receive("POST /v1/acq");
        advanceSeconds(9);
        receive("uire HTTP/1.1\r\n"); // more bytes do not move the deadline
        assertTrue(channel.isOpen());
        advanceSeconds(1);
        assertFalse(channel.isOpen(), "10 s after the first byte and still no whole request");
    }

    @Test
    void aConnectionIdleBetweenRequestsIsLeftOpenAndTheNextRequestHasADeadlineOfItsOwn()
    {
        channel.freezeTime();
        receive("POST /v1/acquire HTTP/1.1\r\n");
        advanceSeconds(5);
        deadline.arrived();
        advanceSeconds(60);
        assertTrue(channel.isOpen(), "idle between requests: the port's idle timeout's business");
        receive("POST");
        advanceSeconds(9);
        assertTrue(channel.isOpen());
        advanceSeconds(1);
        assertFalse(channel.isOpen());
    }
}
