package dev.limiter.server.region;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import dev.limiter.protocol.policy.RegionReport;

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
 * A report's body on the wire: a {@link RegionReport} in protobuf's JSON on one line, as this node
 * serves it ({@link #json}) and reads it ({@link #parse}, unknown fields ignored). Read from another
 * node as text, it is refused once it passes a bound: the exchange's peers are authenticated, but a
 * report is a few KiB, and a peer gone wrong must not make this node buffer without end (Java 17's
 * HttpClient has no limiting body handler of its own).
 */
final class ReportBody implements HttpResponse.BodySubscriber<String>
{
    /** Most bytes of a report read from another node: one is a few KiB (a share and a demand per regional policy). */
    static final int MAX_BYTES = 1 << 20;

    private static final JsonFormat.Printer PRINTER = JsonFormat.printer().omittingInsignificantWhitespace();
    private static final JsonFormat.Parser PARSER = JsonFormat.parser().ignoringUnknownFields();

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

    /** The report as served: its JSON and a newline. */
    static String json(final RegionReport.Builder report) throws InvalidProtocolBufferException
    {
        return PRINTER.print(report) + "\n";
    }

    /** A report as read from another node. */
    static RegionReport parse(final String body) throws InvalidProtocolBufferException
    {
        final RegionReport.Builder report = RegionReport.newBuilder();
        PARSER.merge(body, report);
        return report.build();
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
