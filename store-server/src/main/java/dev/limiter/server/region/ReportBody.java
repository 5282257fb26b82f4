package dev.limiter.server.region;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;

/**
 * The body of another node's report as text, refused once it passes a bound: the exchange's peers
 * are authenticated, but a report is a few KiB, and a peer gone wrong must not make this node
 * buffer without end (Java 17's HttpClient has no limiting body handler of its own).
 */
final class ReportBody implements HttpResponse.BodySubscriber<String>
{
    /** Thrown (as the body's failure) when a report passes the bound. */
    static final class TooLarge extends IOException
    {
        private static final long serialVersionUID = 1L;

        TooLarge(final int maxBytes)
        {
            super("a report over " + maxBytes + " bytes");
        }
    }

    private final int maxBytes;
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final CompletableFuture<String> body = new CompletableFuture<>();
    private Flow.Subscription subscription;

    ReportBody(final int maxBytes)
    {
        this.maxBytes = maxBytes;
    }

    @Override
    public void onSubscribe(final Flow.Subscription subscription)
    {
        this.subscription = subscription;
        subscription.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(final List<ByteBuffer> items)
    {
        for (final ByteBuffer item : items)
        {
            if (body.isDone())
            {
                return; // refused already: what was still on its way is dropped
            }
            if (bytes.size() + item.remaining() > maxBytes)
            {
                subscription.cancel();
                body.completeExceptionally(new TooLarge(maxBytes));
                return;
            }
            final byte[] chunk = new byte[item.remaining()];
            item.get(chunk);
            bytes.writeBytes(chunk);
        }
    }

    @Override
    public void onError(final Throwable failure)
    {
        body.completeExceptionally(failure);
    }

    @Override
    public void onComplete()
    {
        body.complete(bytes.toString(StandardCharsets.UTF_8));
    }

    @Override
    public CompletionStage<String> getBody()
    {
        return body;
    }
}
