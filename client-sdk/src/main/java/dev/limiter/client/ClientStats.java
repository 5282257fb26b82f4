package dev.limiter.client;

import java.time.Duration;

/**
 * What one {@link LimiterClient} has seen, read at one moment ({@link LimiterClient#stats()}):
 * counts since the client started, and its state now. {@link LimiterMetrics} publishes these.
 *
 * @param openConnections         connections open now
 * @param openCircuits            circuits open now: one per Raft group whose calls are decided
 *                                locally until a node answers again, plus one when calls not routed
 *                                to a group are; 0 while every call tries a node
 * @param routesByShard           whether calls go straight to their shard's leader (a shard map
 *                                that names several Raft groups is held)
 * @param epoll                   whether the native epoll transport is in use (else NIO)
 * @param redirects               frames a node answered NOT_LEADER; their calls went on to the
 *                                leader it named, or to another node a little later, within their
 *                                deadlines
 * @param overloadedFrames        frames a node answered OVERLOADED (its log was behind); their calls
 *                                were sent again after a backoff, within their deadlines
 * @param fastRejections          calls refused here because the cluster had refused the same
 *                                descriptor until a time not yet reached (fast local rejection)
 * @param rampRefusals            calls the recovery ramp after an outage refused here
 * @param degradedTime            time with at least one circuit open, the current outage included
 * @param degradedWindowsReported outage windows reported to the cluster's audit log
 * @param tokenLeaseTokensLeased  tokens taken from the cluster as blocks (policies with tokenLease)
 * @param tokenLeaseTokensUsed    tokens of those blocks that calls used
 * @param tokenLeaseTokensLapsed  tokens of those blocks that lapsed unused (never given back)
 * @param leaseReleaseFailures    concurrency leases whose release failed; each counted against its
 *                                limit until it expired
 * @param fleetInstances          SDK instances subscribed at the nodes as they last reported it (the
 *                                largest count among this client's connections), 0 before a report
 * @param lateDeadlines           blocking calls the caller's thread ended past their deadline
 *                                because the SDK's deadline timer had not yet
 * @param pausesNoticed           pauses of this process (a GC, a stopped or starved process) of 20 ms
 *                                or more past a wake-up the deadline timer planned
 * @param pausedTimeouts          calls that expired because this process was paused while they
 *                                waited: decided locally, not counted against the store
 */
public record ClientStats(
    int openConnections,
    int openCircuits,
    boolean routesByShard,
    boolean epoll,
    long redirects,
    long overloadedFrames,
    long fastRejections,
    long rampRefusals,
    Duration degradedTime,
    long degradedWindowsReported,
    long tokenLeaseTokensLeased,
    long tokenLeaseTokensUsed,
    long tokenLeaseTokensLapsed,
    long leaseReleaseFailures,
    int fleetInstances,
    long lateDeadlines,
    long pausesNoticed,
    long pausedTimeouts)
{
    /** Whether any circuit is open: some calls are decided locally at once, without trying a node. */
    public boolean circuitOpen()
    {
        return openCircuits != 0;
    }
}
