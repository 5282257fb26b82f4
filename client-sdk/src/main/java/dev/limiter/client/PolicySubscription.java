package dev.limiter.client;

import dev.limiter.protocol.Features;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.PoliciesCodec;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.ScheduledFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.TimeUnit;

/**
 * One connection's subscription to its node's policy set (POLICIES): asked when the link opens and
 * renewed every {@link ConnectionSettings#policyRefreshNanos()}, so that the cache knows a node
 * still stands behind its set (its TTL counts from the last answer). The subscription carries this
 * SDK's instance id when the node listed {@link Features#FLEET} in its HELLO answer, so that it
 * counts this SDK in the FLEET reports it pushes. Event loop only, but for {@link #fleetInstances()}.
 */
final class PolicySubscription
{
    private static final Logger LOG = LoggerFactory.getLogger(PolicySubscription.class);

    private final EventLoop loop;
    private final Link link;
    /** Null when the client does not follow policies: nothing is asked, FLEET reports are still read. */
    private final PolicyCache policies;
    private final ConnectionSettings settings;
    private final String peer;
    private ScheduledFuture<?> refresh;
    /** Whether the node behind the link counts SDK instances (it listed {@link Features#FLEET}). */
    private boolean withInstanceId;
    /** Whether the node behind the current link has answered HELLO: renewals wait for it. */
    private boolean greeted;
    /** SDK instances the node last reported (FLEET), 0 before any report; kept through an outage. */
    private volatile int fleetInstances;

    PolicySubscription(final EventLoop loop, final Link link, final PolicyCache policies,
        final ConnectionSettings settings, final String peer)
    {
        this.loop = loop;
        this.link = link;
        this.policies = policies;
        this.settings = settings;
        this.peer = peer;
    }

    /** The link opened and the node said what it can do (a new node, perhaps upgraded, may be behind it). */
    void opened(final Channel ch, final long nodeFeatures)
    {
        withInstanceId = Features.has(nodeFeatures, Features.FLEET);
        greeted = true;
        if (policies != null)
        {
            subscribe(ch);
        }
    }

    /**
     * An ERROR with correlation id 0, which answers a subscription (a set too large to send, say).
     *
     * @return whether it was this subscription's (else it is the connection's to handle)
     */
    boolean refused(final int code, final String message)
    {
        if (policies == null)
        {
            return false;
        }
        LOG.debug("{} did not serve the policy set: {} {}", peer, code, message);
        return true;
    }

    /** A new link opened: nothing is asked on it until its node has answered HELLO. */
    void linkOpened()
    {
        greeted = false;
    }

    /** A POLICIES_RESULT. */
    void received(final PoliciesCodec.Result result)
    {
        if (policies != null)
        {
            policies.received(result.version(), result.set());
        }
    }

    /** A FLEET report. */
    void fleet(final int instances)
    {
        fleetInstances = instances;
    }

    int fleetInstances()
    {
        return fleetInstances;
    }

    void close()
    {
        if (refresh != null)
        {
            refresh.cancel(false);
        }
    }

    private void subscribe(final Channel ch)
    {
        final byte[] instanceId = settings.instanceId();
        final ByteBuf request = ch.alloc().buffer(Frame.HEADER_LENGTH + 2 + instanceId.length);
        PoliciesCodec.writeRequest(request, 0, true, withInstanceId ? instanceId : null);
        link.writeAndFlush(ch, request);
        if (refresh == null)
        {
            refresh = loop.scheduleWithFixedDelay(this::renew, settings.policyRefreshNanos(),
                settings.policyRefreshNanos(),
                TimeUnit.NANOSECONDS);
        }
    }

    private void renew()
    {
        final Channel ch = link.channel();
        if (ch != null && greeted)
        {
            subscribe(ch);
        }
    }
}
