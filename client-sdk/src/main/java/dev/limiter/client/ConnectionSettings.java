package dev.limiter.client;

import dev.limiter.protocol.PoliciesCodec;
import io.netty.channel.Channel;
import io.netty.handler.ssl.SslContext;

import java.nio.charset.StandardCharsets;

/**
 * What every connection of a client shares.
 *
 * @param channelType          Netty's socket channel class (epoll or NIO, as the client's loops)
 * @param tls                  TLS to the nodes, or null for plain TCP
 * @param connectTimeoutMillis TCP connect timeout per attempt, ms
 * @param keepAliveNanos       a connection that wrote nothing for this long sends a PING, ns
 * @param maxBatch             most acquires in one frame
 * @param maxFrameBytes        largest frame sent, bytes (a larger batch is split)
 * @param policyRefreshNanos   how often the policy subscription is renewed, ns; 0 when not following policies
 * @param instanceId           this SDK instance as nodes count it for FLEET, UTF-8
 */
record ConnectionSettings(Class<? extends Channel> channelType, SslContext tls, long connectTimeoutMillis,
    long keepAliveNanos,
    int maxBatch, int maxFrameBytes, long policyRefreshNanos, byte[] instanceId)
{
    ConnectionSettings
    {
        if (instanceId.length < 1 || instanceId.length > PoliciesCodec.MAX_INSTANCE_ID_BYTES)
        {
            throw new IllegalArgumentException("instance id must be 1 to " + PoliciesCodec.MAX_INSTANCE_ID_BYTES +
                " bytes of UTF-8, was " + instanceId.length);
        }
    }

    static byte[] utf8(final String instanceId)
    {
        return instanceId.getBytes(StandardCharsets.UTF_8);
    }

    boolean followsPolicies()
    {
        return policyRefreshNanos > 0;
    }
}
