package dev.limiter.client;

import dev.limiter.protocol.DecisionIds;
import dev.limiter.protocol.ReasonCode;

import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.Optional;

/** The store's answer to one acquire. Immutable. */
public final class Decision
{
    private final boolean allowed;
    private final ReasonCode reason;
    private final long remaining;
    private final long limit;
    private final long retryAfterNanos;
    private final long resetAfterNanos;
    private final String policyId;
    private final long policyVersion;
    private final long windowSeconds;
    private final boolean degraded;
    private final boolean holdsLease;
    private final long leaseId;
    private final int leaseCheck;
    private final boolean fromTokenLease;
    /** The node's id of this decision: its frame's base (0: none) and its record in the frame. */
    private final long idBase;
    private final int idEntry;

    Decision(final boolean allowed, final ReasonCode reason, final long remaining, final long limit,
        final long retryAfterNanos, final long resetAfterNanos, final String policyId, final long policyVersion, final long windowSeconds)
    {
        this(allowed, reason, remaining, limit, retryAfterNanos, resetAfterNanos, policyId, policyVersion, windowSeconds, false);
    }

    Decision(final boolean allowed, final ReasonCode reason, final long remaining, final long limit,
        final long retryAfterNanos, final long resetAfterNanos, final String policyId, final long policyVersion, final long windowSeconds,
        final boolean degraded)
    {
        this(allowed, reason, remaining, limit, retryAfterNanos, resetAfterNanos, policyId, policyVersion, windowSeconds, degraded, false, 0,
            0, false, 0, 0);
    }

    /**
     * A node's decision, named by record {@code idEntry} of the frame whose decision-id base is {@code idBase}
     * (0: the node sent no ids).
     */
    Decision(final boolean allowed, final ReasonCode reason, final long remaining, final long limit,
        final long retryAfterNanos, final long resetAfterNanos, final String policyId, final long policyVersion, final long windowSeconds,
        final long idBase, final int idEntry)
    {
        this(allowed, reason, remaining, limit, retryAfterNanos, resetAfterNanos, policyId, policyVersion, windowSeconds, false, false, 0,
            0, false, idBase, idEntry);
    }

    private Decision(final boolean allowed, final ReasonCode reason, final long remaining, final long limit,
        final long retryAfterNanos, final long resetAfterNanos, final String policyId, final long policyVersion, final long windowSeconds,
        final boolean degraded, final boolean holdsLease, final long leaseId, final int leaseCheck, final boolean fromTokenLease,
        final long idBase, final int idEntry)
    {
        this.idBase = idBase;
        this.idEntry = idEntry;
        this.leaseCheck = leaseCheck;
        this.fromTokenLease = fromTokenLease;
        this.holdsLease = holdsLease;
        this.leaseId = leaseId;
        this.degraded = degraded;
        this.allowed = allowed;
        this.reason = reason;
        this.remaining = remaining;
        this.limit = limit;
        this.retryAfterNanos = retryAfterNanos;
        this.resetAfterNanos = resetAfterNanos;
        this.policyId = policyId;
        this.policyVersion = policyVersion;
        this.windowSeconds = windowSeconds;
    }

    /**
     * Whether this SDK decided on its own because no node answered in time (fail-open from the
     * policy's emergency budget, or fail-closed): the cluster's budgets were not consulted.
     */
    public boolean degraded()
    {
        return degraded;
    }

    /** This decision, holding the lease {@code leaseId} a concurrency limit granted. */
    Decision withLease(final long leaseId, final int leaseCheck)
    {
        return new Decision(allowed, reason, remaining, limit, retryAfterNanos, resetAfterNanos, policyId, policyVersion, windowSeconds,
            degraded, true, leaseId, leaseCheck, false, idBase, idEntry);
    }

    /**
     * This node rejection repeated by the SDK without asking ({@code LocalRejections}), with the times left now:
     * it keeps the rejection's id, the decision that refused the caller.
     */
    Decision repeatedRejection(final long retryAfter, final long resetAfter)
    {
        return new Decision(false, ReasonCode.RATE_LIMITED, remaining, limit, retryAfter, resetAfter, policyId, policyVersion,
            windowSeconds, false, false, 0, 0, false, idBase, idEntry);
    }

    /**
     * The node's id of this decision, as the {@code Limiter-Decision-Id} header carries it and
     * {@code ./limiter appeal add} takes it (e.g. {@code 3f9a0c1be4d27a10-2}). Empty for a decision the SDK
     * made alone ({@link #degraded()}: there is no node decision to appeal), for one served from a token
     * block ({@link #fromTokenLease()}: the node decided the block, not this call, and such answers are
     * always allowed), and when the node is older than decision ids. A rejection the SDK repeats
     * without asking until its retry-after keeps the id of the node's rejection it repeats.
     */
    public Optional<String> decisionId()
    {
        return idBase == 0 ? Optional.empty() : Optional.of(DecisionIds.format(idBase, idEntry));
    }

    /** The check the node gave with the lease (a release sends it back). */
    int leaseCheck()
    {
        return leaseCheck;
    }

    /**
     * The answer the SDK gives from a block of tokens this grant leased to it: allowed, with the
     * policy, limit and window of this (the block's) grant; {@code remaining} is what the bucket
     * had left when the block was granted.
     */
    Decision asTokenLeaseAnswer()
    {
        return new Decision(true, ReasonCode.ALLOWED, remaining, limit, 0, resetAfterNanos, policyId, policyVersion, windowSeconds,
            false, false, 0, 0, true, 0, 0);
    }

    /**
     * Whether the SDK decided this from tokens the cluster leased to it (a policy with
     * {@code tokenLease}): the tokens were charged to the bucket when the block was granted, so
     * this is the cluster's budget spent without a round trip, not a local guess ({@link #degraded()}).
     */
    public boolean fromTokenLease()
    {
        return fromTokenLease;
    }

    /**
     * Whether the grant took a lease of a concurrency limit ({@code maxConcurrent}) that the
     * caller gives back when done ({@link Lease#close()}); until then, or until the lease expires
     * (its policy's {@code leaseTtl}), it counts against the limit.
     */
    public boolean holdsLease()
    {
        return holdsLease;
    }

    /** The cluster's id of the lease this grant holds (the cluster time of the grant, ns); 0 when {@link #holdsLease() none}. */
    public long leaseId()
    {
        return leaseId;
    }

    /** Whether the request may go ahead (its cost has been charged). */
    public boolean allowed()
    {
        return allowed;
    }

    public ReasonCode reason()
    {
        return reason;
    }

    /** Whole tokens left in the bucket after this decision. */
    public long remaining()
    {
        return remaining;
    }

    /** The bucket's capacity (burst) in tokens. */
    public long limit()
    {
        return limit;
    }

    /**
     * Exact time until the requested cost is available: zero when allowed, and
     * {@link ChronoUnit#FOREVER} when it never will be ({@link ReasonCode#COST_EXCEEDS_BURST}). For
     * an allowed {@link ReasonCode#RESERVED} decision (a WAIT policy), how long after the answer the
     * request may go ahead: {@link #waitNanos()}.
     */
    public Duration retryAfter()
    {
        return retryAfterNanos < 0 ? ChronoUnit.FOREVER.getDuration() : Duration.ofNanos(retryAfterNanos);
    }

    /** {@link #retryAfter()} in nanoseconds; -1 for never. */
    public long retryAfterNanos()
    {
        return retryAfterNanos;
    }

    /**
     * Nanoseconds the caller must wait, from when the answer arrived, before the request goes
     * ahead: the tokens a WAIT policy reserved for it exist only then ({@link ReasonCode#RESERVED}).
     * 0 for every other decision. {@code LimiterClient.acquireBlocking} has waited it out already, and
     * the future of an async {@code acquire} completes only once it has passed (on a JDK timer thread),
     * so a caller of either kind goes ahead when it has the decision.
     */
    public long waitNanos()
    {
        return allowed && reason == ReasonCode.RESERVED ? retryAfterNanos : 0;
    }

    /** Whether retrying later can ever succeed. */
    public boolean retryable()
    {
        return retryAfterNanos >= 0 && reason != ReasonCode.COST_EXCEEDS_BURST;
    }

    /** Time until the bucket is full again. */
    public Duration resetAfter()
    {
        return Duration.ofNanos(resetAfterNanos);
    }

    public long resetAfterNanos()
    {
        return resetAfterNanos;
    }

    /** Id of the policy that decided. */
    public String policyId()
    {
        return policyId;
    }

    public long policyVersion()
    {
        return policyVersion;
    }

    /** Seconds an empty bucket of this policy takes to fill (whole seconds, rounded up). */
    public long windowSeconds()
    {
        return windowSeconds;
    }

    @Override
    public String toString()
    {
        return "Decision{" + (allowed ? "allowed" : "denied") + (degraded ? " (degraded)" : "") + (holdsLease ? " lease " + leaseId : "") + (fromTokenLease ? " (token lease)" : "") + (idBase != 0 ? " id " + DecisionIds.format(idBase, idEntry) : "") + ", reason=" + reason + ", remaining=" + remaining +
            ", limit=" + limit + ", retryAfter=" + (retryAfterNanos < 0 ? "never" : Duration.ofNanos(retryAfterNanos)) +
            ", resetAfter=" + Duration.ofNanos(resetAfterNanos) + ", policy=" + policyId + " v" + policyVersion + '}';
    }
}
