package dev.limiter.protocol;

import com.google.protobuf.Duration;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import dev.limiter.protocol.policy.Algorithm;
import dev.limiter.protocol.policy.CalendarWindow;
import dev.limiter.protocol.policy.Excess;
import dev.limiter.protocol.policy.LimitSpec;
import dev.limiter.protocol.policy.Mode;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.Rollout;
import dev.limiter.protocol.policy.Scope;
import dev.limiter.protocol.policy.Selector;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.ToIntFunction;
import java.util.regex.Pattern;

/**
 * A validated, compiled policy set and the matcher over it. A request gets its most specific
 * matching policy (ties: higher priority, then smaller id), or the set's default baseline. The
 * request never supplies a limit. Immutable and safe to share between threads.
 * <p>
 * Validation and compilation stay together here: the nodes and the SDK must agree on which policy
 * a request gets, so both use this one class for it.
 */
public final class PolicySetIndex
{
    /** Used when a set has no default policy: 10 requests per second per tenant, burst 20. */
    public static final Policy BUILT_IN_DEFAULT = Policy.newBuilder()
        .setId("default")
        .setRate(10)
        .setPeriod(Duration.newBuilder().setSeconds(1))
        .setBurst(20)
        .setScope(Scope.TENANT)
        .setOwner("limiter")
        .setReason("built-in conservative baseline for requests no policy matches")
        .build();

    /** Most policies one set may hold (refs travel as 16-bit values). */
    public static final int MAX_POLICIES = 65_000;

    private static final Pattern ID_PATTERN = Pattern.compile("[a-z0-9][a-z0-9._-]{0,62}");
    private static final long MAX_PERIOD_NANOS = 366L * 24 * 3600 * 1_000_000_000L;
    /** A concurrency policy's lease TTL when it sets none. */
    public static final long DEFAULT_LEASE_TTL_NANOS = 60_000_000_000L;

    private final CompiledPolicy[] byOrdinal;
    private final CompiledPolicy[] bySpecificity;
    private final CompiledPolicy[] shadowBySpecificity;
    private final boolean rolloutShadows;
    private final CompiledPolicy[] stacked;
    private final boolean extraLimits;
    private final boolean leases;

    /** Most stacked policies one request is charged against besides its own. */
    public static final int MAX_STACKED_PER_REQUEST = 4;
    /** Most limits a policy may have beside its own ({@code limits}). */
    public static final int MAX_EXTRA_LIMITS = 3;
    /**
     * Most buckets a request is charged against beside its own: its policy's extra limits, and
     * every stacked policy with theirs.
     */
    public static final int MAX_PARTS_PER_REQUEST = (1 + MAX_STACKED_PER_REQUEST) * (1 + MAX_EXTRA_LIMITS) - 1;
    private final CompiledPolicy defaultPolicy;
    private final long version;
    private final long fingerprint;
    private final int size;

    private PolicySetIndex(final CompiledPolicy[] byOrdinal, final CompiledPolicy defaultPolicy, final long version)
    {
        this.byOrdinal = byOrdinal;
        this.defaultPolicy = defaultPolicy;
        this.version = version;
        long hash = 1125899906842597L;
        for (final CompiledPolicy policy : byOrdinal)
        {
            if (policy == null)
            {
                continue; // an ordinal of a deleted policy
            }
            final String json;
            try
            {
                json = JsonFormat.printer().print(policy.source());
            }
            catch (final InvalidProtocolBufferException e)
            {
                throw new IllegalStateException(e);
            }
            for (int i = 0; i < json.length(); i++)
            {
                hash = 31 * hash + json.charAt(i);
            }
            hash = 31 * hash + policy.ordinal();
        }
        this.fingerprint = hash;
        this.size = (int)Arrays.stream(byOrdinal).filter(p -> p != null).count();
        final Comparator<CompiledPolicy> mostSpecificFirst = Comparator.comparingLong(CompiledPolicy::specificity).reversed()
            .thenComparing(Comparator.comparingInt(CompiledPolicy::priority).reversed())
            .thenComparing(CompiledPolicy::id);
        this.bySpecificity = Arrays.stream(byOrdinal)
            .filter(p -> p != null && p != defaultPolicy && !p.shadow() && !p.stacked())
            .sorted(mostSpecificFirst)
            .toArray(CompiledPolicy[]::new);
        this.shadowBySpecificity = Arrays.stream(byOrdinal)
            .filter(p -> p != null && p.shadow())
            .sorted(mostSpecificFirst)
            .toArray(CompiledPolicy[]::new);
        this.rolloutShadows = Arrays.stream(byOrdinal).anyMatch(p -> p != null && p.rolloutShadowsOthers());
        this.stacked = Arrays.stream(byOrdinal)
            .filter(p -> p != null && p.stacked())
            .sorted(mostSpecificFirst)
            .toArray(CompiledPolicy[]::new);
        this.extraLimits = Arrays.stream(byOrdinal).anyMatch(p -> p != null && (p.source().getLimitsCount() > 0 ||
            p.source().getRollout().getFallback().getLimitsCount() > 0));
        this.leases = Arrays.stream(byOrdinal).anyMatch(p -> p != null && (p.source().getMaxConcurrent() != 0 ||
            p.source().getRollout().getFallback().getMaxConcurrent() != 0));
    }

    /**
     * Parses a policy file in protobuf JSON form.
     *
     * @throws PolicyValidationException when the JSON is malformed, names unknown fields, or any
     * policy is invalid; nothing is partially applied
     */
    public static PolicySetIndex fromJson(final String json)
    {
        final PolicySet.Builder builder = PolicySet.newBuilder();
        try
        {
            JsonFormat.parser().merge(json, builder);
        }
        catch (final InvalidProtocolBufferException | RuntimeException e)
        {
            throw new PolicyValidationException(List.of("policy JSON is invalid: " + JsonHints.explain(e.getMessage())));
        }
        return compile(builder.build());
    }

    /**
     * {@code set} without shadow and stacked policies: what a request's own policy is matched
     * against (an SDK's local decisions, Envoy's gateway), compiled with {@link #compile(PolicySet)}.
     */
    public static PolicySet.Builder enforcedOnly(final PolicySet set)
    {
        final PolicySet.Builder enforced = set.toBuilder().clearPolicies();
        for (final Policy p : set.getPoliciesList())
        {
            if (p.getMode() != Mode.SHADOW && !p.getStacked())
            {
                enforced.addPolicies(p);
            }
        }
        return enforced;
    }

    /** Renders a set as the JSON {@link #fromJson} reads. */
    public static String toJson(final PolicySet set)
    {
        try
        {
            return JsonFormat.printer().print(set);
        }
        catch (final InvalidProtocolBufferException e)
        {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Validates and compiles a set.
     *
     * @throws PolicyValidationException listing every problem, field by field
     */
    public static PolicySetIndex compile(final PolicySet set)
    {
        return compile(set, null);
    }

    /**
     * Validates and compiles a set whose policies keep the ordinals {@code ordinals} gives them
     * (the control plane's: an id keeps one ordinal per mode across versions, and buckets carry
     * it). With ordinals, an id may appear twice: its enforced version and its shadow version.
     * Ordinals must be distinct and below {@link #MAX_POLICIES}; null numbers them in file order,
     * the default last.
     *
     * @throws PolicyValidationException listing every problem, field by field
     */
    public static PolicySetIndex compile(final PolicySet set, final ToIntFunction<Policy> ordinals)
    {
        final List<String> errors = new ArrayList<>();
        if (set.getPoliciesCount() + 1 > MAX_POLICIES)
        {
            errors.add("policies: " + set.getPoliciesCount() + " policies; at most " + (MAX_POLICIES - 1));
            throw new PolicyValidationException(errors);
        }
        final List<CompiledPolicy> compiled = new ArrayList<>();
        final Set<String> ids = new HashSet<>();
        final Map<String, String> selectors = new HashMap<>();
        for (int i = 0; i < set.getPoliciesCount(); i++)
        {
            final Policy policy = set.getPolicies(i);
            final String where = "policies[" + i + "]" + (policy.getId().isEmpty() ? "" : " (" + policy.getId() + ")");
            final CompiledPolicy c = compileOne(policy, ordinals == null ? compiled.size() : ordinals.applyAsInt(policy), where, errors);
            if (c == null)
            {
                continue;
            }
            if (!ids.add(ordinals == null ? c.id() : c.id() + (c.shadow() ? "/shadow" : "")))
            {
                errors.add(where + ".id: duplicate id '" + c.id() + "'");
                continue;
            }
            // Shadow policies are matched apart from enforced ones: a shadow may select what an enforced policy does.
            final String previous = selectors.putIfAbsent(c.selectorKey() + (c.shadow() ? "/shadow" : "") + (c.stacked() ? "/stacked" : ""), c.id());
            if (previous != null)
            {
                errors.add(where + ".selector: conflicts with policy '" + previous +
                    "': both select exactly the same requests; merge them or make one more specific");
                continue;
            }
            compiled.add(c);
        }
        final Policy defaultSource = set.hasDefaultPolicy() ? set.getDefaultPolicy() : BUILT_IN_DEFAULT;
        final Policy defaultPolicy = defaultSource.getId().isEmpty() ? defaultSource.toBuilder().setId("default").build() : defaultSource;
        if (!defaultPolicy.getSelector().equals(Selector.getDefaultInstance()))
        {
            errors.add("defaultPolicy.selector: must be empty (the default applies to whatever no policy matches)");
        }
        if (ids.contains(defaultPolicy.getId()))
        {
            errors.add("defaultPolicy.id: '" + defaultPolicy.getId() + "' is also the id of a policy");
        }
        final CompiledPolicy compiledDefault = compileOne(defaultPolicy,
            ordinals == null ? compiled.size() : ordinals.applyAsInt(defaultPolicy), "defaultPolicy", errors);
        if (defaultPolicy.getStacked())
        {
            errors.add("defaultPolicy.stacked: the default is what applies when nothing else does; it cannot be stacked");
        }
        if (defaultPolicy.getMode() == Mode.SHADOW)
        {
            errors.add("defaultPolicy.mode: must be ENFORCE (the default decides whatever no policy matches)");
        }
        if (!errors.isEmpty())
        {
            throw new PolicyValidationException(errors);
        }
        compiled.add(compiledDefault);
        int limit = 0;
        for (final CompiledPolicy c : compiled)
        {
            if (c.ordinal() < 0 || c.ordinal() >= MAX_POLICIES)
            {
                throw new IllegalArgumentException("ordinal " + c.ordinal() + " of " + c.id() + " outside [0, " + MAX_POLICIES + ")");
            }
            limit = Math.max(limit, c.ordinal() + 1);
        }
        final CompiledPolicy[] byOrdinal = new CompiledPolicy[limit];
        for (final CompiledPolicy c : compiled)
        {
            if (byOrdinal[c.ordinal()] != null)
            {
                throw new IllegalArgumentException("ordinal " + c.ordinal() + " given to both " + byOrdinal[c.ordinal()].id() + " and " + c.id());
            }
            byOrdinal[c.ordinal()] = c;
        }
        return new PolicySetIndex(byOrdinal, compiledDefault, Math.max(1, set.getVersion()));
    }

    /**
     * Checks one policy on its own (what a change of it must pass before the whole set is
     * compiled): errors name the field, e.g. {@code "policy.rate: must be 1 to ... tokens per period, was 0"}.
     */
    public static List<String> validatePolicy(final Policy policy)
    {
        final List<String> errors = new ArrayList<>();
        compileOne(policy, 0, "policy", errors);
        return errors;
    }

    /**
     * Compiles one policy on its own, for its selector (exemptions match requests like policies).
     *
     * @throws PolicyValidationException naming every bad field, prefixed with {@code where}
     */
    public static CompiledPolicy compileOne(final Policy policy, final String where)
    {
        final List<String> errors = new ArrayList<>();
        final CompiledPolicy compiled = compileOne(policy, 0, where, errors);
        if (compiled == null)
        {
            throw new PolicyValidationException(errors);
        }
        return compiled;
    }

    /** Compiles one validated policy's own limit (for buckets of a version no longer in force). */
    public static Limit limitOf(final Policy policy)
    {
        // An unlimited policy's limit is never consulted (its requests are answered NO_LIMIT first).
        final Policy source = policy.getUnlimited() ? UNLIMITED_PLACEHOLDER : policy;
        return limitOf(source, periodNanos(source));
    }

    /** Every limit of one validated policy: its own first, then its extra {@code limits} in order. */
    public static Limit[] limitsOf(final Policy policy)
    {
        final Limit[] limits = new Limit[1 + policy.getLimitsCount()];
        limits[0] = limitOf(policy);
        for (int k = 0; k < policy.getLimitsCount(); k++)
        {
            limits[k + 1] = limitOf(extraLimit(policy, k));
        }
        return limits;
    }

    private static Limit limitOf(final Policy policy, final long periodNanos)
    {
        if (policy.getMaxConcurrent() != 0)
        {
            return new ConcurrencyLimit(policy.getMaxConcurrent(), leaseTtlNanos(policy));
        }
        final Limit limit = plainLimitOf(policy, periodNanos);
        switch (policy.getExcess())
        {
            case SOFT_OVERAGE:
                return ExcessLimit.softOverage(limit, policy.getOveragePercent());
            case WAIT:
                return ExcessLimit.waiting(limit, durationNanos(policy.getMaxWait()));
            default:
                return limit;
        }
    }

    private static Limit plainLimitOf(final Policy policy, final long periodNanos)
    {
        final long burst = policy.getBurst() == 0 ? policy.getRate() : policy.getBurst();
        switch (policy.getAlgorithm())
        {
            case FIXED_WINDOW:
                return policy.getCalendarWindow() == CalendarWindow.MONTH ? new CalendarMonthWindow(policy.getRate()) :
                    new FixedWindow(policy.getRate(), periodNanos);
            case SLIDING_WINDOW:
                return new SlidingWindow(policy.getRate(), periodNanos);
            case GCRA:
                return new Gcra(TokenBucket.rate(policy.getRate(), periodNanos, burst));
            default:
                return TokenBucket.rate(policy.getRate(), periodNanos, burst);
        }
    }

    /** Checks an envoy selector and what it cannot be combined with; its route template, or null when it is wrong. */
    private static RouteTemplate compileEnvoySelector(final Policy p, final String where, final List<String> errors)
    {
        final int before = errors.size();
        final Selector s = p.getSelector();
        if (!s.toBuilder().clearEnvoy().build().equals(Selector.getDefaultInstance()))
        {
            errors.add(where + ".selector: envoy selects Envoy's descriptors alone; leave tenant, principal, method, route, " +
                "clientIp and region unset (write them as descriptor entries)");
        }
        EnvoyDescriptors.check(s.getEnvoy(), where + ".selector.envoy", errors);
        final Scope scope = CompiledPolicy.effectiveScope(p);
        if (scope != Scope.TENANT && scope != Scope.GLOBAL)
        {
            errors.add(where + ".scope: an envoy selector's buckets are per distinct descriptor values (TENANT, the default) " +
                "or one for all (GLOBAL), was " + scope);
        }
        if (p.getStacked())
        {
            errors.add(where + ".stacked: Envoy sends each limit as a descriptor of its own; an envoy selector cannot be stacked");
        }
        if (p.getMaxConcurrent() != 0)
        {
            errors.add(where + ".maxConcurrent: Envoy's rate limit service has no release; use a rate");
        }
        if (p.getExcess() == Excess.WAIT)
        {
            errors.add(where + ".excess: Envoy cannot hold a request until its tokens exist; use REJECT or SOFT_OVERAGE");
        }
        if (errors.size() != before)
        {
            return null;
        }
        return RouteTemplate.parse(EnvoyDescriptors.template(s.getEnvoy()));
    }

    /** Units a regional policy's limit is counted in on a node that decides against a share of it (1/1000 token). */
    public static final long REGIONAL_SCALE = 1000;

    private static void checkRegional(final Policy p, final String where, final List<String> errors)
    {
        final int floor = p.getRegional().getMinSharePercent();
        if (floor > 50)
        {
            errors.add(where + ".regional.minSharePercent: 1 to 50 (0: the default 5), was " + floor);
        }
        if (p.getMaxConcurrent() != 0)
        {
            errors.add(where + ".regional: a concurrency limit cannot be split among regions (a lease is given back where it " +
                "was taken); use a rate");
        }
        if (p.getLimitsCount() > 0 || p.getStacked() || p.hasReserve())
        {
            errors.add(where + ".regional: a regional policy has one limit of its own: no extra limits, not stacked, no reserve");
        }
        if (p.hasTokenLease())
        {
            errors.add(where + ".regional: SDK token leases are not offered on regional policies (a lease's tokens would not " +
                "follow the region's share); remove tokenLease");
        }
        if (p.getMaxConcurrent() == 0 && p.getLimitsCount() == 0 && !p.getStacked())
        {
            // A node of a region counts the limit in thousandths of a token: it must still fit.
            try
            {
                limitsOf(scaledForRegions(p));
            }
            catch (final IllegalArgumentException | ArithmeticException e)
            {
                errors.add(where + ".regional: the rate and burst times " + REGIONAL_SCALE + " (what a region counts in) do not fit: " +
                    e.getMessage() + "; lower them");
            }
        }
    }

    /**
     * The policy as a node of a region counts it: rate and burst in thousandths of a token, so that
     * a request costs 1000 / share of them and the region's share can move without the limit (and
     * so the meaning of a bucket's stored tokens) changing.
     */
    public static Policy scaledForRegions(final Policy p)
    {
        final long burst = p.getBurst() == 0 ? p.getRate() : p.getBurst();
        return p.toBuilder().setRate(Math.multiplyExact(p.getRate(), REGIONAL_SCALE))
            .setBurst(Math.multiplyExact(burst, REGIONAL_SCALE)).build();
    }

    private static CompiledPolicy compileOne(final Policy p, final int ordinal, final String where, final List<String> errors)
    {
        final int before = errors.size();
        if (!ID_PATTERN.matcher(p.getId()).matches())
        {
            errors.add(where + ".id: '" + p.getId() + "' must match [a-z0-9][a-z0-9._-]{0,62}");
        }
        if (p.getUnlimited())
        {
            checkUnlimited(p, where, errors);
        }
        else
        {
            checkLimitFields(p, where, errors);
        }
        if (p.getReplacesCount() > 0)
        {
            checkReplaces(p, where, errors);
        }
        checkExcess(p, where, errors);
        if (p.hasTokenLease())
        {
            checkTokenLease(p, where, errors);
        }
        if (p.getSplitAcrossShards())
        {
            checkSplit(p, where, errors);
        }
        if (p.hasRegional())
        {
            checkRegional(p, where, errors);
        }
        if (p.getVersion() > CompiledPolicy.MAX_VERSION)
        {
            errors.add(where + ".version: at most " + CompiledPolicy.MAX_VERSION + " versions of one policy, was " +
                Long.toUnsignedString(p.getVersion()) + "; give the policy a new id");
        }
        if (p.getLimitsCount() > MAX_EXTRA_LIMITS)
        {
            errors.add(where + ".limits: at most " + MAX_EXTRA_LIMITS + " more limits on one policy, was " + p.getLimitsCount());
        }
        for (int k = 0; k < p.getLimitsCount(); k++)
        {
            checkLimitFields(extraLimit(p, k), where + ".limits[" + k + "]", errors);
        }
        if (p.getLimitsCount() > 0 && p.getMode() == Mode.SHADOW)
        {
            errors.add(where + ".limits: a SHADOW version is evaluated against one limit; shadow each limit as a policy of its own, " +
                "or enforce the version with several limits");
        }
        if (p.getScope() == Scope.UNRECOGNIZED)
        {
            errors.add(where + ".scope: unknown scope");
        }
        if (p.hasReserve())
        {
            final long burstTokens = p.getMaxConcurrent() != 0 ? p.getMaxConcurrent() : p.getBurst() == 0 ? p.getRate() : p.getBurst();
            if (!p.getStacked())
            {
                errors.add(where + ".reserve: only a stacked (shared) budget keeps a reserve; set stacked: true");
            }
            if (p.getReserve().getTokens() < 1 || p.getReserve().getTokens() >= burstTokens)
            {
                errors.add(where + ".reserve.tokens: must be at least 1 and below the burst (" + burstTokens + "), was " +
                    p.getReserve().getTokens());
            }
        }
        if (p.hasEmergency() && (p.getEmergency().getPercent() > 100 || p.getEmergency().getRate() > Long.MAX_VALUE / 2))
        {
            errors.add(where + ".emergency.percent: must be 1 to 100 (0: the default 10), was " + p.getEmergency().getPercent());
        }
        if (p.getStacked() && p.getMode() == Mode.SHADOW)
        {
            errors.add(where + ".stacked: a SHADOW policy cannot be stacked (shadows never charge what decides)");
        }
        if (p.getMode() == Mode.UNRECOGNIZED)
        {
            errors.add(where + ".mode: unknown mode; ENFORCE or SHADOW");
        }
        if (p.getOwner().isBlank())
        {
            errors.add(where + ".owner: required (the team or person answerable for this policy)");
        }
        RouteTemplate route = null;
        final Selector s = p.getSelector();
        if (s.hasEnvoy())
        {
            route = compileEnvoySelector(p, where, errors);
        }
        else if (!s.getRoute().isBlank())
        {
            try
            {
                route = RouteTemplate.parse(s.getRoute());
            }
            catch (final IllegalArgumentException e)
            {
                errors.add(where + ".selector.route: " + e.getMessage());
            }
        }
        checkSelectorField(where, DescriptorField.TENANT, s.getTenant(), errors);
        checkSelectorField(where, DescriptorField.PRINCIPAL, s.getPrincipal(), errors);
        checkSelectorField(where, DescriptorField.METHOD, s.getMethod(), errors);
        checkSelectorField(where, DescriptorField.CLIENT_IP, s.getClientIp(), errors);
        checkSelectorField(where, DescriptorField.REGION, s.getRegion(), errors);
        final Scope scope = CompiledPolicy.effectiveScope(p);
        if (scope == Scope.PRINCIPAL && !s.getTenant().isBlank() && !s.getPrincipal().isBlank())
        {
            // Harmless, but the policy then has one bucket: say so rather than surprise.
            errors.add(where + ".scope: PRINCIPAL with a fixed tenant and principal is one bucket; use GLOBAL");
        }
        if (errors.size() != before)
        {
            return null;
        }
        CompiledPolicy fallback = null;
        if (p.hasRollout())
        {
            final Rollout rollout = p.getRollout();
            if (rollout.getPercent() > 100)
            {
                errors.add(where + ".rollout.percent: must be 0 to 100, was " + rollout.getPercent());
            }
            for (int t = 0; t < rollout.getTenantsCount(); t++)
            {
                if (rollout.getTenants(t).isBlank())
                {
                    errors.add(where + ".rollout.tenants[" + t + "]: empty");
                }
                checkSelectorField(where + ".rollout.tenants[" + t + "]", DescriptorField.TENANT, rollout.getTenants(t), errors);
            }
            if (p.getMode() == Mode.SHADOW)
            {
                errors.add(where + ".rollout: a SHADOW version is not rolled out (it never decides); roll out an ENFORCE version");
            }
            if (!rollout.hasFallback())
            {
                errors.add(where + ".rollout: needs the version the other tenants stay on; start a rollout through the admin API " +
                    "(./limiter policy rollout), on a policy that is already enforced");
            }
            else if (errors.size() == before)
            {
                final Policy previous = rollout.getFallback();
                if (previous.hasRollout() || !previous.getSelector().equals(p.getSelector()) || previous.getMode() == Mode.SHADOW)
                {
                    errors.add(where + ".rollout.fallback: must be an enforced version with the same selector and no rollout of its own");
                }
                else
                {
                    fallback = compileOne(previous, ordinal, where + ".rollout.fallback", errors);
                }
            }
            if (errors.size() != before)
            {
                return null;
            }
        }
        try
        {
            final CompiledPolicy compiled = new CompiledPolicy(p, ordinal, limitsOf(p), route);
            if (fallback != null)
            {
                final byte[][] tenants = p.getRollout().getTenantsList().stream()
                    .map(t -> DescriptorRules.trim(t).getBytes(StandardCharsets.UTF_8)).toArray(byte[][]::new);
                compiled.rollout(tenants, p.getRollout().getPercent(), p.getRollout().getOthersInShadow(), fallback);
            }
            return compiled;
        }
        catch (final IllegalArgumentException e)
        {
            errors.add(where + ": " + e.getMessage());
            return null;
        }
    }

    /** What an unlimited policy's limit compiles from: never consulted, but every compiled policy has a limit. */
    private static final Policy UNLIMITED_PLACEHOLDER = Policy.newBuilder().setRate(1).build();
    /** Most ids one policy's {@code replaces} may list. */
    public static final int MAX_REPLACES = 16;

    /** An unlimited policy: an envoy selector, and no limit of any kind. */
    private static void checkUnlimited(final Policy p, final String where, final List<String> errors)
    {
        if (!p.getSelector().hasEnvoy())
        {
            errors.add(where + ".unlimited: only for envoy selectors (envoyproxy/ratelimit's unlimited: true); to let other " +
                "requests through, give them an exemption (./limiter exempt) or a generous policy");
        }
        if (p.getRate() != 0 || p.getBurst() != 0 || p.hasPeriod() || p.getAlgorithm() != Algorithm.ALGORITHM_UNSPECIFIED ||
            p.getCalendarWindow() != CalendarWindow.CALENDAR_WINDOW_UNSPECIFIED || p.getMaxConcurrent() != 0 || p.hasLeaseTtl() ||
            p.getLimitsCount() > 0 || p.getExcess() != Excess.EXCESS_UNSPECIFIED || p.getOveragePercent() != 0 || p.hasMaxWait() ||
            p.hasTokenLease() || p.hasRegional() || p.getSplitAcrossShards() || p.hasReserve() || p.hasEmergency())
        {
            errors.add(where + ".unlimited: an unlimited policy has no limit: leave rate, period, burst, algorithm, calendarWindow, " +
                "maxConcurrent, leaseTtl, limits, excess, overagePercent, maxWait, tokenLease, regional, splitAcrossShards, reserve " +
                "and emergency unset");
        }
        if (p.getMode() == Mode.SHADOW)
        {
            errors.add(where + ".unlimited: an unlimited policy never refuses, so it has nothing to shadow; make it ENFORCE");
        }
    }

    /** {@code replaces}: an envoy selector's, naming other policies by id. */
    private static void checkReplaces(final Policy p, final String where, final List<String> errors)
    {
        if (!p.getSelector().hasEnvoy())
        {
            errors.add(where + ".replaces: only for envoy selectors (envoyproxy/ratelimit's replaces, between the descriptors " +
                "of one request); other requests are decided by one policy each already");
        }
        if (p.getReplacesCount() > MAX_REPLACES)
        {
            errors.add(where + ".replaces: at most " + MAX_REPLACES + " ids, was " + p.getReplacesCount());
        }
        for (int i = 0; i < p.getReplacesCount(); i++)
        {
            final String id = p.getReplaces(i);
            if (!ID_PATTERN.matcher(id).matches())
            {
                errors.add(where + ".replaces[" + i + "]: '" + id + "' is not a policy id ([a-z0-9][a-z0-9._-]{0,62})");
            }
            else if (id.equals(p.getId()))
            {
                errors.add(where + ".replaces[" + i + "]: a policy cannot replace itself");
            }
        }
    }

    /** Rate, period, burst and algorithm of a policy's own limit (or of an extra one, as {@link #extraLimit} makes it). */
    private static void checkLimitFields(final Policy p, final String where, final List<String> errors)
    {
        if (p.getMaxConcurrent() != 0)
        {
            checkConcurrencyFields(p, where, errors);
            return;
        }
        if (p.hasLeaseTtl())
        {
            errors.add(where + ".leaseTtl: only a concurrency limit has leases; set maxConcurrent or drop leaseTtl");
        }
        if (p.getRate() <= 0 || p.getRate() > Long.MAX_VALUE / 2)
        {
            errors.add(where + ".rate: must be 1 to " + Long.MAX_VALUE / 2 + " tokens per period, was " + Long.toUnsignedString(p.getRate()));
        }
        final long periodNanos = periodNanos(p);
        if (periodNanos <= 0 || periodNanos > MAX_PERIOD_NANOS)
        {
            errors.add(where + ".period: must be between 1ns and 366 days, was " + p.getPeriod().getSeconds() + "s " +
                p.getPeriod().getNanos() + "ns");
        }
        if (p.getBurst() < 0 || p.getBurst() > Long.MAX_VALUE / 2)
        {
            errors.add(where + ".burst: must be 1 to " + Long.MAX_VALUE / 2 + " tokens (or unset for the rate), was " +
                Long.toUnsignedString(p.getBurst()));
        }
        checkAlgorithm(p, where, errors);
    }

    /** A concurrency limit's fields: maxConcurrent and leaseTtl instead of a rate, REJECT only. */
    private static void checkConcurrencyFields(final Policy p, final String where, final List<String> errors)
    {
        if (p.getMaxConcurrent() > ConcurrencyLimit.MAX_CONCURRENT)
        {
            errors.add(where + ".maxConcurrent: must be 1 to " + ConcurrencyLimit.MAX_CONCURRENT + ", was " +
                Integer.toUnsignedString(p.getMaxConcurrent()));
        }
        if (p.getRate() != 0 || p.getBurst() != 0 || p.hasPeriod() || p.getAlgorithm() != Algorithm.ALGORITHM_UNSPECIFIED ||
            p.getCalendarWindow() != CalendarWindow.CALENDAR_WINDOW_UNSPECIFIED)
        {
            errors.add(where + ".maxConcurrent: a concurrency limit counts leases held, not a rate: leave rate, period, burst, " +
                "algorithm and calendarWindow unset (add a rate as one of its `limits`)");
        }
        if (p.hasLeaseTtl())
        {
            final long ttl = durationNanos(p.getLeaseTtl());
            if (ttl < ConcurrencyLimit.MIN_TTL_NANOS || ttl > ConcurrencyLimit.MAX_TTL_NANOS)
            {
                errors.add(where + ".leaseTtl: must be 1s to 24h (e.g. \"30s\"), was " + p.getLeaseTtl().getSeconds() + "s " +
                    p.getLeaseTtl().getNanos() + "ns");
            }
        }
        if (p.getExcess() != Excess.EXCESS_UNSPECIFIED && p.getExcess() != Excess.REJECT)
        {
            errors.add(where + ".excess: a concurrency limit only rejects (nothing says when a lease comes back); " +
                "leave excess unset or REJECT");
        }
    }

    /** Longest and shortest settings of SDK token blocks ({@code tokenLease}). */
    public static final long MIN_LEASE_WINDOW_NANOS = 1_000_000L;
    public static final long MAX_LEASE_WINDOW_NANOS = 1_000_000_000L;
    public static final long MAX_LEASE_AGE_NANOS = 10_000_000_000L;
    /** Highest {@code tokenLease.hotRate}, tokens per second. */
    public static final long MAX_HOT_RATE = 1_000_000_000_000L;

    /** SDK token blocks: only where a local decision from a block is the node's decision, just earlier. */
    private static void checkTokenLease(final Policy p, final String where, final List<String> errors)
    {
        final dev.limiter.protocol.policy.TokenLease lease = p.getTokenLease();
        if (lease.getHotRate() > MAX_HOT_RATE)
        {
            errors.add(where + ".tokenLease.hotRate: tokens per second, at most " + MAX_HOT_RATE + " (0: lease any key), was " +
                Long.toUnsignedString(lease.getHotRate()));
        }
        if (lease.getMaxSharePercent() > 50)
        {
            errors.add(where + ".tokenLease.maxSharePercent: 1 to 50 (0: the default 10), was " + Integer.toUnsignedString(lease.getMaxSharePercent()));
        }
        final long window = tokenLeaseWindowNanos(lease);
        if (window < MIN_LEASE_WINDOW_NANOS || window > MAX_LEASE_WINDOW_NANOS)
        {
            errors.add(where + ".tokenLease.demandWindow: 1ms to 1s (e.g. \"0.05s\"), was " + window + " ns");
        }
        final long age = tokenLeaseMaxAgeNanos(lease);
        if (age < window || age > MAX_LEASE_AGE_NANOS)
        {
            errors.add(where + ".tokenLease.maxAge: from the demand window to 10s, was " + age + " ns");
        }
        if (p.getMaxConcurrent() != 0 || (p.getAlgorithm() != Algorithm.ALGORITHM_UNSPECIFIED && p.getAlgorithm() != Algorithm.TOKEN_BUCKET &&
            p.getAlgorithm() != Algorithm.GCRA))
        {
            errors.add(where + ".tokenLease: only a TOKEN_BUCKET or GCRA rate is leased to SDKs (a window's count or a lease " +
                "count is the cluster's to keep)");
        }
        if (p.getLimitsCount() > 0 || p.getStacked() || p.getMode() == Mode.SHADOW ||
            (p.getExcess() != Excess.EXCESS_UNSPECIFIED && p.getExcess() != Excess.REJECT))
        {
            errors.add(where + ".tokenLease: not with extra limits, stacked, SHADOW or an excess other than REJECT " +
                "(each needs the cluster to see every request)");
        }
    }

    /** A budget held as a share per shard: one bucket for everybody, of a rate (a lease count is kept where it was taken). */
    private static void checkSplit(final Policy p, final String where, final List<String> errors)
    {
        if (CompiledPolicy.effectiveScope(p) != Scope.GLOBAL)
        {
            errors.add(where + ".splitAcrossShards: only a GLOBAL bucket is split (a TENANT, PRINCIPAL or CLIENT_IP " +
                "policy already spreads its many keys over the shards), was " + CompiledPolicy.effectiveScope(p));
        }
        if (p.getMaxConcurrent() != 0)
        {
            errors.add(where + ".splitAcrossShards: not with maxConcurrent (a lease is given back to the share that granted it, " +
                "which a release cannot name)");
        }
        if (p.hasTokenLease())
        {
            errors.add(where + ".splitAcrossShards: not with tokenLease (a block is sized from the whole burst, a share holds " +
                "burst / shards; lease the key instead of splitting it)");
        }
    }

    /** The demand window of SDK token blocks, ns (50 ms unless set). */
    public static long tokenLeaseWindowNanos(final dev.limiter.protocol.policy.TokenLease lease)
    {
        return lease.hasDemandWindow() ? durationNanos(lease.getDemandWindow()) : 50_000_000L;
    }

    /** How long an SDK token block's tokens may be used after the grant, ns (100 ms unless set). */
    public static long tokenLeaseMaxAgeNanos(final dev.limiter.protocol.policy.TokenLease lease)
    {
        return lease.hasMaxAge() ? durationNanos(lease.getMaxAge()) : 100_000_000L;
    }

    /** A concurrency policy's lease TTL in nanoseconds (60 s unless set). */
    private static long leaseTtlNanos(final Policy p)
    {
        return p.hasLeaseTtl() ? durationNanos(p.getLeaseTtl()) : DEFAULT_LEASE_TTL_NANOS;
    }

    /**
     * Extra limit {@code k} of a policy as a policy of its own: the policy with that limit's rate,
     * period, burst, algorithm and calendar window (and the policy's own excess handling).
     */
    static Policy extraLimit(final Policy p, final int k)
    {
        final LimitSpec spec = p.getLimits(k);
        final Policy.Builder limit = p.toBuilder().clearLimits().setRate(spec.getRate()).setBurst(spec.getBurst())
            .setAlgorithm(spec.getAlgorithm()).setCalendarWindow(spec.getCalendarWindow()).clearPeriod()
            .clearMaxConcurrent().clearLeaseTtl();
        if (spec.hasPeriod())
        {
            limit.setPeriod(spec.getPeriod());
        }
        return limit.build();
    }

    private static void checkExcess(final Policy p, final String where, final List<String> errors)
    {
        if (p.getExcess() == Excess.UNRECOGNIZED)
        {
            errors.add(where + ".excess: unknown excess handling; REJECT, SOFT_OVERAGE or WAIT");
        }
        if (p.getExcess() == Excess.WAIT)
        {
            final long maxWait = p.hasMaxWait() ? durationNanos(p.getMaxWait()) : 0;
            if (maxWait < 1 || maxWait > ExcessLimit.MAX_WAIT_NANOS)
            {
                errors.add(where + ".maxWait: a WAIT policy needs the longest wait it may ask of a caller, 1ns to 1 hour (e.g. \"0.5s\")");
            }
        }
        else if (p.hasMaxWait())
        {
            errors.add(where + ".maxWait: only a policy with excess WAIT waits; set excess: WAIT or drop it");
        }
        else if (p.getExcess() == Excess.SOFT_OVERAGE && (p.getOveragePercent() < 1 || p.getOveragePercent() > 100))
        {
            errors.add(where + ".overagePercent: a SOFT_OVERAGE allows 1 to 100 percent of the limit beyond it, was " +
                Integer.toUnsignedString(p.getOveragePercent()));
        }
        else if (p.getExcess() != Excess.SOFT_OVERAGE && p.getOveragePercent() != 0)
        {
            errors.add(where + ".overagePercent: only a policy with excess SOFT_OVERAGE allows an overage; set excess: SOFT_OVERAGE or drop it");
        }
    }

    private static void checkAlgorithm(final Policy p, final String where, final List<String> errors)
    {
        if (p.getCalendarWindow() != CalendarWindow.CALENDAR_WINDOW_UNSPECIFIED)
        {
            if (p.getCalendarWindow() == CalendarWindow.UNRECOGNIZED)
            {
                errors.add(where + ".calendarWindow: unknown calendar window; MONTH");
            }
            else if (p.getAlgorithm() != Algorithm.FIXED_WINDOW)
            {
                errors.add(where + ".calendarWindow: only a FIXED_WINDOW counts per calendar month; set algorithm FIXED_WINDOW");
            }
            else if (p.hasPeriod())
            {
                errors.add(where + ".period: a calendar-month window has no period of its own; leave period unset");
            }
        }
        if (p.getExcess() == Excess.WAIT && p.getAlgorithm() != Algorithm.ALGORITHM_UNSPECIFIED && p.getAlgorithm() != Algorithm.TOKEN_BUCKET &&
            p.getAlgorithm() != Algorithm.GCRA)
        {
            errors.add(where + ".algorithm: WAIT needs a TOKEN_BUCKET or GCRA, whose steady refill a reservation waits for; a " +
                p.getAlgorithm() + " answers with the exact retry-after instead (use REJECT)");
        }
        switch (p.getAlgorithm())
        {
            case ALGORITHM_UNSPECIFIED:
            case TOKEN_BUCKET:
            case GCRA:
                return;
            case FIXED_WINDOW:
            case SLIDING_WINDOW:
                if (p.getBurst() != 0 && p.getBurst() != p.getRate())
                {
                    errors.add(where + ".burst: a " + p.getAlgorithm() + " grants `rate` per window and has no burst of its own; " +
                        "leave burst 0 (or equal to rate), was " + Long.toUnsignedString(p.getBurst()));
                }
                if (p.getAlgorithm() == Algorithm.SLIDING_WINDOW && p.getRate() > SlidingWindow.MAX_LIMIT)
                {
                    errors.add(where + ".rate: a SLIDING_WINDOW counts at most " + SlidingWindow.MAX_LIMIT + " per period, was " +
                        Long.toUnsignedString(p.getRate()) + "; use FIXED_WINDOW or TOKEN_BUCKET, or a shorter period");
                }
                return;
            default:
                errors.add(where + ".algorithm: unknown algorithm; TOKEN_BUCKET, GCRA, FIXED_WINDOW or SLIDING_WINDOW");
        }
    }

    private static void checkSelectorField(final String where, final DescriptorField field, final String value, final List<String> errors)
    {
        final byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
        final ByteBuf view = Unpooled.wrappedBuffer(bytes);
        final int start = DescriptorRules.trimStart(view, 0, bytes.length);
        final int end = DescriptorRules.trimEnd(view, start, bytes.length);
        if (end == start)
        {
            return;
        }
        final FieldProblem problem = DescriptorRules.check(field, view, start, end - start);
        if (problem != FieldProblem.NONE)
        {
            errors.add(where + ".selector." + problem.describe(field, end - start));
        }
    }

    private static long periodNanos(final Policy p)
    {
        if (!p.hasPeriod())
        {
            return 1_000_000_000L;
        }
        return durationNanos(p.getPeriod());
    }

    /** A duration in nanoseconds, or -1 when negative or beyond 366 days. */
    private static long durationNanos(final Duration d)
    {
        if (d.getSeconds() < 0 || d.getNanos() < 0 || d.getSeconds() > MAX_PERIOD_NANOS / 1_000_000_000L)
        {
            return -1;
        }
        return d.getSeconds() * 1_000_000_000L + d.getNanos();
    }

    /**
     * Whether a request has no limit at all: a descriptor of Envoy's rate limit service that no
     * policy selects, or that an unlimited policy decides ({@code matched} is what {@link #match}
     * gave it, {@code policy} the version that decides the request). Only Envoy's descriptors:
     * any other request that no policy selects gets the default policy. Allocates nothing.
     */
    public boolean noLimit(final CompiledPolicy matched, final CompiledPolicy policy, final DescriptorView descriptor)
    {
        return descriptor.envoy() && (matched == defaultPolicy || policy.unlimited());
    }

    /** The policy for a descriptor: the most specific match, else the default. Allocates nothing. */
    public CompiledPolicy match(final DescriptorView descriptor)
    {
        for (final CompiledPolicy policy : bySpecificity)
        {
            if (policy.matches(descriptor))
            {
                return policy;
            }
        }
        return defaultPolicy;
    }

    /**
     * The most specific SHADOW policy matching a descriptor, or null. A shadow policy spends its
     * own buckets and is counted, but never decides. Allocates nothing.
     */
    public CompiledPolicy matchShadow(final DescriptorView descriptor)
    {
        for (final CompiledPolicy policy : shadowBySpecificity)
        {
            if (policy.matches(descriptor))
            {
                return policy;
            }
        }
        return null;
    }

    /**
     * The stacked policies matching a descriptor, most specific first, at most
     * {@link #MAX_STACKED_PER_REQUEST}, written to {@code out}. Allocates nothing.
     *
     * @return how many
     */
    public int matchStacked(final DescriptorView descriptor, final CompiledPolicy[] out)
    {
        int found = 0;
        for (int i = 0; i < stacked.length && found < MAX_STACKED_PER_REQUEST; i++)
        {
            if (stacked[i].matches(descriptor))
            {
                out[found++] = stacked[i];
            }
        }
        return found;
    }

    /** Whether any policy (or the version a rollout leaves tenants on) is a concurrency limit, whose grants take leases. */
    public boolean hasLeases()
    {
        return leases;
    }

    /** Whether any stacked (hierarchical) policy is in the set. */
    public boolean hasStacked()
    {
        return stacked.length > 0;
    }

    /** Whether any policy (or the version a rollout leaves tenants on) has several limits ({@code limits}). */
    public boolean hasExtraLimits()
    {
        return extraLimits;
    }

    /** Whether any request may be evaluated in shadow: a SHADOW policy, or a rollout shadowing the tenants it leaves out. */
    public boolean hasShadow()
    {
        return shadowBySpecificity.length > 0 || rolloutShadows;
    }

    /** Policy by its ordinal (the ref carried in results); null for an ordinal no policy in force holds. */
    public CompiledPolicy policy(final int ordinal)
    {
        return byOrdinal[ordinal];
    }

    /** Number of policies including the default. */
    public int size()
    {
        return size;
    }

    /** One more than the highest ordinal in use: arrays indexed by ordinal need this length. */
    public int ordinalLimit()
    {
        return byOrdinal.length;
    }

    public CompiledPolicy defaultPolicy()
    {
        return defaultPolicy;
    }

    /**
     * A hash of every policy in ordinal order: equal on two nodes exactly when their policy sets
     * would decide alike (replicas refuse to apply decisions made under another set).
     */
    public long fingerprint()
    {
        return fingerprint;
    }

    /** Version of the whole set (from the file; at least 1). */
    public long version()
    {
        return version;
    }

    /** Policies in ordinal order (from a file: the default last). */
    public List<CompiledPolicy> policies()
    {
        return Arrays.stream(byOrdinal).filter(p -> p != null).toList();
    }
}
