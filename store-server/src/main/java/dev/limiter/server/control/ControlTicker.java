package dev.limiter.server.control;

import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.policy.Exemption;
import dev.limiter.protocol.policy.Tick;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * The deciding node's clock for the control plane: every {@link #PERIOD_MILLIS} it logs a TICK when
 * one is due, which brings scheduled versions into force and expires exemptions whose time has come
 * (within a period plus a commit; the request path already stops honouring an exemption at its
 * expiry) and, at most once every {@link #BYPASS_REPORT_MILLIS}, carries bypass counts into the audit
 * log. Only the node that decides for the control group ticks; time goes into the log with the entry.
 */
public final class ControlTicker implements AutoCloseable
{
    private static final Logger LOG = LoggerFactory.getLogger(ControlTicker.class);
    /** How often a tick is considered, in milliseconds. */
    public static final long PERIOD_MILLIS = 250;
    /** How often bypass counts go to the audit log while an exemption is used, in milliseconds. */
    public static final long BYPASS_REPORT_MILLIS = 60_000;

    private final PolicyState state;
    private final PolicyControl control;
    private final BooleanSupplier decides;
    private final LongSupplier wallMillis;
    private final String nodeName;
    /** Bypasses already carried into the log, by exemption id (ticker thread only). */
    private final Map<String, Long> reportedBypasses = new HashMap<>();
    private long lastBypassReportMillis;
    private ScheduledExecutorService thread;

    /**
     * @param decides    whether this node decides for the control group now (a single node always does)
     * @param wallMillis the wall clock, in milliseconds since the epoch
     */
    public ControlTicker(final PolicyState state, final PolicyControl control, final BooleanSupplier decides,
        final LongSupplier wallMillis, final String nodeName)
    {
        this.state = state;
        this.control = control;
        this.decides = decides;
        this.wallMillis = wallMillis;
        this.nodeName = nodeName;
    }

    /** Ticks every {@link #PERIOD_MILLIS} on a thread of its own until {@link #close()}. */
    public void start()
    {
        thread = Executors.newSingleThreadScheduledExecutor(r ->
        {
            final Thread ticking = new Thread(r, "limiter-control-tick");
            ticking.setDaemon(true);
            return ticking;
        });
        thread.scheduleWithFixedDelay(this::tickQuietly, PERIOD_MILLIS, PERIOD_MILLIS, TimeUnit.MILLISECONDS);
    }

    private void tickQuietly()
    {
        try
        {
            tick();
        }
        catch (final Exception e)
        {
            LOG.debug("control-plane tick not committed (retried): {}", e.toString());
        }
    }

    /**
     * Logs a TICK if one is due now and waits for it (at most 5 s).
     *
     * @return whether a tick was logged and applied
     */
    boolean tick() throws Exception
    {
        if (!decides.getAsBoolean())
        {
            return false;
        }
        final long now = wallMillis.getAsLong();
        final boolean scheduleDue = state.scheduledDue(now);
        final List<Exemption> active = state.exemptions();
        if (active.isEmpty() && !scheduleDue)
        {
            return false;
        }
        final boolean expiryDue = active.stream().anyMatch(e -> Timestamps.toMillis(e.getExpiresAt()) <= now);
        final Map<String, Long> bypassed = state.bypassesSince(reportedBypasses);
        if (!scheduleDue && !expiryDue && (bypassed.isEmpty() || now - lastBypassReportMillis < BYPASS_REPORT_MILLIS))
        {
            return false;
        }
        final PolicyState.Outcome outcome = control.submit(PolicyState.command(nodeName, now)
            .setTick(Tick.newBuilder().putAllBypassed(bypassed)).build())
            .get(5, TimeUnit.SECONDS);
        if (outcome.status() != PolicyState.Status.OK)
        {
            return false;
        }
        bypassed.forEach((id, n) -> reportedBypasses.merge(id, n, Long::sum));
        lastBypassReportMillis = now;
        return true;
    }

    @Override
    public void close()
    {
        if (thread != null)
        {
            thread.shutdownNow();
        }
    }
}
