package dev.limiter.server.admin;

import com.google.protobuf.Timestamp;
import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.policy.AuditPage;
import dev.limiter.protocol.policy.AuditRecord;
import dev.limiter.server.control.PolicyControl;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;

import java.text.ParseException;
import java.util.function.Consumer;
import java.util.function.Predicate;

/** {@code GET /v1/audit?since=&policy=&owner=&limit=}: the control plane's audit records, filtered. */
final class AuditRoutes
{
    private static final int MAX_AUDIT_PAGE = 10_000;
    private static final int DEFAULT_PAGE = 1000;

    private final PolicyControl control;

    AuditRoutes(final PolicyControl control)
    {
        this.control = control;
    }

    /** {@code GET /v1/audit}: an AuditPage. */
    void page(final AdminCall call, final Consumer<FullHttpResponse> reply)
    {
        final Predicate<AuditRecord> filter = filter(call);
        final int limit = limit(call.first("limit"));
        reply.accept(AdminApi.json(HttpResponseStatus.OK,
            AuditPage.newBuilder().addAllRecords(control.state().audit(filter, limit)).build()));
    }

    /** The records at or after {@code since} (RFC 3339), of one policy and one owner when given. */
    private static Predicate<AuditRecord> filter(final AdminCall call)
    {
        final String since = call.first("since");
        final String policy = call.first("policy");
        final String owner = call.first("owner");
        Predicate<AuditRecord> filter = record -> true;
        if (since != null)
        {
            final Timestamp from;
            try
            {
                from = Timestamps.parse(since);
            }
            catch (final ParseException e)
            {
                throw new BadRequest("since: '" + since + "' is not an RFC 3339 time such as 2026-12-03T09:00:00Z");
            }
            filter = filter.and(record -> Timestamps.compare(record.getAt(), from) >= 0);
        }
        if (policy != null)
        {
            filter = filter.and(record -> record.getPolicyId().equals(policy));
        }
        if (owner != null)
        {
            filter = filter.and(record -> record.getOwner().equals(owner));
        }
        return filter;
    }

    private static int limit(final String limitText)
    {
        if (limitText == null)
        {
            return DEFAULT_PAGE;
        }
        int limit;
        try
        {
            limit = Integer.parseInt(limitText);
        }
        catch (final NumberFormatException e)
        {
            limit = -1;
        }
        if (limit < 1 || limit > MAX_AUDIT_PAGE)
        {
            throw new BadRequest("limit: must be a number from 1 to " + MAX_AUDIT_PAGE + ", was '" + limitText + "'");
        }
        return limit;
    }
}
