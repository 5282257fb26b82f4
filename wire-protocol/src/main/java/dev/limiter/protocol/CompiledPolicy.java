package dev.limiter.protocol;

import dev.limiter.protocol.policy.Consistency;
import dev.limiter.protocol.policy.Mode;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.Scope;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Locale;

/**
 * A validated policy in the form the hot path uses: selector values as bytes, the route as a
 * {@link RouteTemplate}, the limit as exact {@link Limit} arithmetic (its algorithm's). Immutable.
 */
public final class CompiledPolicy
{
    /**
     * Largest policy version: a bucket key carries the version in 28 bits (the top 4 of its field
     * name which of the policy's limits the bucket is for).
     */
    public static final long MAX_VERSION = (1L << 28) - 1;

    private final Policy source;
    private final int ordinal;
    private final byte[] idUtf8;
    private final Limit limit;
    private final Scope scope;
    private final byte[] tenant;
    private final byte[] principal;
    private final byte[] method;
    private final RouteTemplate route;
    private final byte[] clientIp;
    private final byte[] region;
    private final long specificity;
    /** Selects requests of Envoy's rate limit service ({@code selector.envoy}, see {@link EnvoyDescriptors}). */
    private final boolean envoy;
    private final long windowSeconds;
    private final boolean strict;
    /** Whether the budget is held as one share per shard ({@link #splitsAcrossShards(Policy)}). */
    private final boolean split;
    /** A split GLOBAL policy of its own (not stacked): any shard's share may decide its request. */
    private final boolean anyShare;
    /** SDK token blocks only for keys decided at this many tokens per second or more (0: any key). */
    private final boolean regional;
    private final long tokenLeaseHotRate;
    /** Per-shard shares of a budget split across shards, for the last shard count asked (immutable once built). */
    private volatile Limit[] shares;

    /** 0 for a policy's own limit; k for the companion that carries its extra limit k - 1. */
    private final int limitIndex;
    /** The policy's extra limits, each as a companion charged with it (empty when it has none). */
    private final CompiledPolicy[] companions;

    CompiledPolicy(final Policy source, final int ordinal, final Limit[] limits, final RouteTemplate route)
    {
        this(source, ordinal, limits, 0, route);
    }

    private CompiledPolicy(final Policy source, final int ordinal, final Limit[] limits, final int limitIndex, final RouteTemplate route)
    {
        this.source = source;
        this.ordinal = ordinal;
        this.idUtf8 = source.getId().getBytes(StandardCharsets.UTF_8);
        this.limit = limits[limitIndex];
        this.limitIndex = limitIndex;
        if (limitIndex == 0 && limits.length > 1)
        {
            companions = new CompiledPolicy[limits.length - 1];
            for (int k = 1; k < limits.length; k++)
            {
                companions[k - 1] = new CompiledPolicy(source, ordinal, limits, k, route);
            }
        }
        else
        {
            companions = NO_COMPANIONS;
        }
        this.scope = effectiveScope(source);
        this.windowSeconds = limit.windowSeconds();
        this.strict = source.getConsistency() == Consistency.STRICT;
        this.split = splitsAcrossShards(source);
        this.anyShare = split && !source.getStacked();
        this.tokenLeaseHotRate = source.hasTokenLease() ? source.getTokenLease().getHotRate() : 0;
        this.regional = source.hasRegional();
        // Selectors are trimmed by exactly the rule requests are (ASCII whitespace only).
        this.tenant = bytesOrNull(DescriptorRules.trim(source.getSelector().getTenant()));
        this.principal = bytesOrNull(DescriptorRules.trim(source.getSelector().getPrincipal()));
        this.envoy = source.getSelector().hasEnvoy();
        this.method = bytesOrNull(DescriptorRules.trim(source.getSelector().getMethod()).toUpperCase(Locale.ROOT));
        this.route = route;
        this.clientIp = ipOrNull(DescriptorRules.trim(source.getSelector().getClientIp()));
        this.region = bytesOrNull(DescriptorRules.trim(source.getSelector().getRegion()).toLowerCase(Locale.ROOT));
        // Lexicographic: tenant, principal, route literals, method, client IP, region.
        this.specificity = (tenant != null ? 1L << 40 : 0) |
            (principal != null ? 1L << 39 : 0) |
            (envoy ? (1L << 30) | EnvoyDescriptors.precedence(source.getSelector().getEnvoy()) << 8 :
                route != null ? (1L + route.literalCount()) << 8 : 0) |
            (method != null ? 1L << 2 : 0) |
            (clientIp != null ? 1L << 1 : 0) |
            (region != null ? 1L : 0);
    }

    /** The scope a policy's buckets are keyed by: as written, TENANT when unspecified. */
    public static Scope effectiveScope(final Policy policy)
    {
        return policy.getScope() == Scope.SCOPE_UNSPECIFIED || policy.getScope() == Scope.UNRECOGNIZED ?
            Scope.TENANT : policy.getScope();
    }

    private static byte[] bytesOrNull(final String value)
    {
        return value.isEmpty() ? null : value.getBytes(StandardCharsets.UTF_8);
    }

    /** The 16-byte form of a validated IP literal, or null when the selector has none. */
    private static byte[] ipOrNull(final String value)
    {
        if (value.isEmpty())
        {
            return null;
        }
        final byte[] text = value.getBytes(StandardCharsets.UTF_8);
        final byte[] ip = new byte[IpAddresses.LENGTH];
        if (!IpAddresses.parse(Unpooled.wrappedBuffer(text), 0, text.length, ip, 0))
        {
            throw new IllegalArgumentException("not an IP address: " + value); // validation rejects it first
        }
        return ip;
    }

    private static final ThreadLocal<byte[]> IP_SCRATCH = ThreadLocal.withInitial(() -> new byte[IpAddresses.LENGTH]);

    private static boolean sameIp(final ByteBuf buf, final int offset, final int length, final byte[] expected)
    {
        final byte[] ip = IP_SCRATCH.get();
        return length > 0 && IpAddresses.parse(buf, offset, length, ip, 0) && Arrays.equals(ip, expected);
    }

    /** Whether every selector field this policy sets matches the descriptor. Allocates nothing. */
    public boolean matches(final DescriptorView d)
    {
        final ByteBuf buf = d.buffer();
        // Envoy's descriptors are selected by envoy selectors only, and envoy selectors select nothing else.
        return envoy == d.envoy() &&
            (tenant == null || RouteTemplate.equalBytes(buf, d.offset(DescriptorField.TENANT), d.length(DescriptorField.TENANT), tenant)) &&
            (principal == null || RouteTemplate.equalBytes(buf, d.offset(DescriptorField.PRINCIPAL), d.length(DescriptorField.PRINCIPAL), principal)) &&
            (method == null || equalsIgnoreAsciiCase(buf, d.offset(DescriptorField.METHOD), d.length(DescriptorField.METHOD), method)) &&
            (route == null || route.matches(buf, d.offset(DescriptorField.ROUTE), d.length(DescriptorField.ROUTE))) &&
            (clientIp == null || sameIp(buf, d.offset(DescriptorField.CLIENT_IP), d.length(DescriptorField.CLIENT_IP), clientIp)) &&
            (region == null || equalsIgnoreAsciiCase(buf, d.offset(DescriptorField.REGION), d.length(DescriptorField.REGION), region));
    }

    private static boolean equalsIgnoreAsciiCase(final ByteBuf buf, final int offset, final int length, final byte[] expected)
    {
        if (length != expected.length)
        {
            return false;
        }
        for (int i = 0; i < length; i++)
        {
            if (DescriptorRules.lower(buf.getByte(offset + i)) != DescriptorRules.lower(expected[i]))
            {
                return false;
            }
        }
        return true;
    }

    /** Position in its {@link PolicySetIndex}; travels in results as the policy ref. */
    public int ordinal()
    {
        return ordinal;
    }

    public String id()
    {
        return source.getId();
    }

    public byte[] idUtf8()
    {
        return idUtf8;
    }

    /** Version in force (a file that leaves it 0 means version 1). */
    public long version()
    {
        return Math.max(1, source.getVersion());
    }

    private static final CompiledPolicy[] NO_COMPANIONS = new CompiledPolicy[0];

    /** The policy's limit: its algorithm's arithmetic with its rate, period and burst (a companion's: its extra limit). */
    public Limit limit()
    {
        return limit;
    }

    /**
     * Which of the policy's limits this is: 0 its own, k its extra limit k - 1 ({@code limits}).
     * Part of its bucket keys, so each limit keeps buckets of its own.
     */
    public int limitIndex()
    {
        return limitIndex;
    }

    /**
     * The policy's extra limits, each as a policy with the same id, ordinal, version, selector and
     * scope and that limit: a request is charged against all of them with this one, or none.
     * Empty (never null) for a policy with one limit, and for a companion.
     */
    public CompiledPolicy[] companions()
    {
        return companions;
    }

    /** The RateLimit-Policy window: whole seconds an empty bucket takes to fill, or a window's length. */
    public long windowSeconds()
    {
        return windowSeconds;
    }

    public Scope scope()
    {
        return scope;
    }

    /** Whether decisions under this policy are answered only after quorum commit. */
    public boolean strict()
    {
        return strict;
    }

    public boolean shadow()
    {
        return source.getMode() == Mode.SHADOW;
    }

    /**
     * Token units of this (stacked) budget kept for requests whose own policy has at least
     * {@link #reserveMinPriority()}; 0 when nothing is reserved.
     */
    public long reserveUnits()
    {
        return source.hasReserve() ? limit.costUnits(source.getReserve().getTokens()) : 0;
    }

    public int reserveMinPriority()
    {
        return source.getReserve().getMinPriority();
    }

    /** Units a request whose own policy is {@code own} must leave in this budget: the reserve, unless it ranks high enough. */
    public long floorFor(final CompiledPolicy own)
    {
        // The reserve is kept in the policy's own limit, not in its extra ones.
        return source.hasReserve() && limitIndex == 0 && own.priority() < reserveMinPriority() ? reserveUnits() : 0;
    }

    /**
     * What a request whose own policy is {@code own} must leave in this budget's bucket on shard
     * {@code shard} of {@code shards}: {@link #floorFor(CompiledPolicy)}, or, for a budget split
     * across shards, that shard's part of the reserve ({@link TokenBucket#shareOf}), in the share's units.
     */
    public long floorFor(final CompiledPolicy own, final int shard, final int shards)
    {
        if (!splitAcrossShards(shards))
        {
            return floorFor(own);
        }
        return source.hasReserve() && limitIndex == 0 && own.priority() < reserveMinPriority() ?
            limitOnShard(shard, shards).costUnits(TokenBucket.shareOf(source.getReserve().getTokens(), shard, shards)) : 0;
    }

    /**
     * Whether a policy is a budget that a node with several shards splits into one equal share per
     * shard ({@link Limit#share}: rates and bursts that add up to the policy's exactly, so the
     * shares together never admit more than the whole budget):
     * <ul>
     * <li>a stacked GLOBAL or CLIENT_IP budget: the requests it is stacked on are decided by the
     * shard of their own bucket (often their tenant's), so no one shard could hold the whole budget;
     * a request may be refused by its shard's share while another share still has tokens;</li>
     * <li>a GLOBAL policy with {@code splitAcrossShards}: one hot key decided by every shard at once
     * instead of by one shard's thread; each request goes to a share that has tokens (the node's
     * frame router spreads them, and skips a share while it is empty).</li>
     * </ul>
     */
    public static boolean splitsAcrossShards(final Policy policy)
    {
        final Scope scope = effectiveScope(policy);
        return policy.getStacked() ? scope == Scope.GLOBAL || scope == Scope.CLIENT_IP :
            policy.getSplitAcrossShards() && scope == Scope.GLOBAL;
    }

    /** {@link #splitsAcrossShards(Policy)} on a node with {@code shards} shards. */
    public boolean splitAcrossShards(final int shards)
    {
        return shards > 1 && split;
    }

    /**
     * Whether a request of this policy may go to any shard's share of its budget: a GLOBAL policy
     * with {@code splitAcrossShards} (a stacked split budget is charged on its request's shard).
     */
    public boolean routedToAnyShare(final int shards)
    {
        return shards > 1 && anyShare;
    }

    /**
     * The rate, in tokens per second, at which the nodes must see a key decided before SDKs take
     * token blocks of it ({@code tokenLease.hotRate}); 0 when SDKs may take blocks of any key (or none).
     */
    public long tokenLeaseHotRate()
    {
        return tokenLeaseHotRate;
    }

    /**
     * The limit of this policy's bucket on shard {@code shard} of {@code shards}: the
     * policy's own, or, for a budget split across shards, that shard's equal share. Allocates nothing
     * once computed for a shard count.
     *
     * @throws IllegalStateException when the budget cannot be split that many ways (its burst is
     *                               below {@code shards}: validation refuses such a policy first)
     */
    public Limit limitOnShard(final int shard, final int shards)
    {
        if (!splitAcrossShards(shards))
        {
            return limit;
        }
        Limit[] split = shares;
        if (split == null || split.length != shards)
        {
            try
            {
                split = shares(limit, shards);
            }
            catch (final IllegalArgumentException e)
            {
                throw new IllegalStateException("policy '" + id() + "' cannot be split across " + shards + " shards: " + e.getMessage(), e);
            }
            shares = split;
        }
        return split[shard];
    }

    /**
     * Every shard's share of {@code limit}, by shard.
     *
     * @throws IllegalArgumentException when the limit cannot be split that many ways, saying why
     */
    public static Limit[] shares(final Limit limit, final int shards)
    {
        final Limit[] split = new Limit[shards];
        for (int s = 0; s < shards; s++)
        {
            split[s] = limit.share(s, shards);
        }
        return split;
    }

    /** Whether its requests have no limit at all ({@code unlimited}: answered NO_LIMIT, nothing charged). */
    public boolean unlimited()
    {
        return source.getUnlimited();
    }

    /** Whether it selects requests of Envoy's rate limit service ({@code selector.envoy}). */
    public boolean envoy()
    {
        return envoy;
    }

    /** Charged beside the most specific policy of every request it matches (hierarchical limits). */
    public boolean stacked()
    {
        return source.getStacked();
    }

    private byte[][] rolloutTenants;
    private int rolloutPercent = -1;
    private boolean rolloutShadowsOthers;
    private CompiledPolicy fallback;

    /** Staged rollout: who gets this version; the others get {@code fallback}. Set once, while compiling. */
    void rollout(final byte[][] tenants, final int percent, final boolean othersInShadow, final CompiledPolicy fallback)
    {
        this.rolloutTenants = tenants;
        this.rolloutPercent = percent;
        this.rolloutShadowsOthers = othersInShadow;
        this.fallback = fallback;
    }

    /** Share of tenants (by hash) this version decides for, 0-100; 100 when not rolling out. */
    public int rolloutPercent()
    {
        return fallback == null ? 100 : rolloutPercent;
    }

    /** Whether tenants left on the previous version are also evaluated against this one in shadow. */
    public boolean rolloutShadowsOthers()
    {
        return rolloutShadowsOthers;
    }

    /**
     * The version that decides this request: this one, unless it is being rolled out and the
     * request's tenant is neither listed nor in the hashed share. Allocates nothing.
     */
    public CompiledPolicy forRequest(final DescriptorView d)
    {
        if (fallback == null)
        {
            return this;
        }
        final ByteBuf buf = d.buffer();
        final int offset = d.offset(DescriptorField.TENANT);
        final int length = d.length(DescriptorField.TENANT);
        for (final byte[] tenant : rolloutTenants)
        {
            if (RouteTemplate.equalBytes(buf, offset, length, tenant))
            {
                return this;
            }
        }
        return Integer.remainderUnsigned(tenantHash(buf, offset, length), 100) < rolloutPercent ? this : fallback;
    }

    /** FNV-1a over the tenant's bytes: stable across nodes, versions and restarts. */
    static int tenantHash(final ByteBuf buf, final int offset, final int length)
    {
        int hash = 0x811C9DC5;
        for (int i = 0; i < length; i++)
        {
            hash ^= buf.getByte(offset + i) & 0xFF;
            hash *= 0x01000193;
        }
        return hash;
    }

    /** Larger is more specific; see docs/policies.md for the order. */
    public long specificity()
    {
        return specificity;
    }

    public int priority()
    {
        return source.getPriority();
    }

    /**
     * Whether the limit is global, split among regions (docs/regions.md): a node of a region decides
     * it against its region's share; elsewhere (no regions) it is an ordinary limit.
     */
    public boolean regional()
    {
        return regional;
    }

    public Policy source()
    {
        return source;
    }

    /** Canonical route template, or null when the policy matches any route. */
    public RouteTemplate route()
    {
        return route;
    }

    /** A key equal for two policies exactly when they select the same requests. */
    String selectorKey()
    {
        return str(tenant) + '\u0000' + str(principal) + '\u0000' + str(method) + '\u0000' +
            (route == null ? "" : route.shape()) + '\u0000' + (clientIp == null ? "" : HexFormat.of().formatHex(clientIp)) + '\u0000' + str(region);
    }

    private static String str(final byte[] b)
    {
        return b == null ? "" : new String(b, StandardCharsets.UTF_8);
    }

    @Override
    public String toString()
    {
        return "CompiledPolicy{" + id() + " v" + version() + ", " + limit + ", scope=" + scope + '}';
    }
}
