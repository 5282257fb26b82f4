package dev.limiter.client;

import dev.limiter.protocol.ErrorCode;
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
 * SDK's instance id, so that the node counts it in the FLEET reports it pushes; a node from before
 * FLEET refuses that form, and is asked in the older one until the link is opened again. Event
 * loop only, but for {@link #fleetInstances()}.
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
    /** False once the node refused the subscription with an instance id; true again when the link opens again. */
    private boolean withInstanceId = true;
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

    /** The link opened (a new node, perhaps upgraded, may be behind it): subscribe with the instance id. */
    void opened(final Channel ch)
    {
        withInstanceId = true;
        if (policies != null)
        {
            subscribe(ch);
        }
    }

    /**
     * An ERROR with correlation id 0, which answers a subscription.
     *
     * @return whether it was the refusal of this subscription (else it is the connection's to handle)
     */
    boolean refused(final int code, final String message, final Channel ch)
    {
        if (policies == null && code != ErrorCode.UNKNOWN_TYPE.code())
        {
            return false;
        }
        if (policies != null && withInstanceId && code == ErrorCode.MALFORMED_FRAME.code()
            && PoliciesCodec.refusedAsOlderNode(message))
        {
            withInstanceId = false;
            LOG.info("{} does not count SDK instances (an older node): subscribing without an instance id", peer);
            subscribe(ch);
            return true;
        }
        LOG.debug("{} did not serve the policy set: {}", peer, message);
        return true;
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
        if (ch != null)
        {
            subscribe(ch);
        }
    }
}
