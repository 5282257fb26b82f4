package dev.limiter.server.region;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ReportBodyTest
{
    private final AtomicBoolean cancelled = new AtomicBoolean();
    private final Flow.Subscription subscription = new Flow.Subscription()
    {
        @Override
        public void request(final long n)
        {
        }

        @Override
        public void cancel()
        {
            cancelled.set(true);
        }
    };

    private static List<ByteBuffer> chunk(final String text)
    {
        return List.of(ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void aBodyUpToTheBoundIsReadWholeAcrossChunks() throws Exception
    {
        final ReportBody body = new ReportBody(10);
        body.onSubscribe(subscription);
        body.onNext(chunk("{\"a\":"));
        body.onNext(chunk("12}"));
        body.onNext(chunk("  "));
        body.onComplete();
        assertEquals("{\"a\":12}  ", body.getBody().toCompletableFuture().get());
        assertFalse(cancelled.get());
    }

    @Test
    void aBodyPastTheBoundIsRefusedAndItsStreamCancelled()
    {
        final ReportBody body = new ReportBody(10);
        body.onSubscribe(subscription);
        body.onNext(chunk("0123456"));
        body.onNext(chunk("7890")); // 11 bytes
        body.onNext(chunk("more")); // still arriving after the cancel: dropped
        body.onComplete();
        assertTrue(cancelled.get(), "the rest is not read");
        final ExecutionException refused = assertThrows(ExecutionException.class, () -> body.getBody().toCompletableFuture().get());
        assertInstanceOf(ReportBody.TooLarge.class, refused.getCause());
        assertTrue(refused.getCause().getMessage().contains("over 10 bytes"), refused.getCause().getMessage());
    }
}
