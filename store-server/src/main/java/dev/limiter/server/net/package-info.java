/**
 * The data port: the Netty pipeline (connection guard, TLS, frame decoder) and
 * {@link dev.limiter.server.net.DataPlaneHandler}, which decodes a frame, hands decision frames to
 * the engine's router and answers the rest (PING, STATUS, POLICIES with the fleet count, SDK
 * reports within their allowances, refusals). Connection hygiene for every port lives here too:
 * caps, idle and unfinished-frame timeouts, back-pressure.
 */
package dev.limiter.server.net;
