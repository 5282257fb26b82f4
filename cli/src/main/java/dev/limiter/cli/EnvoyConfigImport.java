package dev.limiter.cli;

import com.google.protobuf.Duration;
import dev.limiter.protocol.EnvoyDescriptors;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.PolicyValidationException;
import dev.limiter.protocol.policy.Algorithm;
import dev.limiter.protocol.policy.CalendarWindow;
import dev.limiter.protocol.policy.EnvoyDescriptor;
import dev.limiter.protocol.policy.EnvoyEntry;
import dev.limiter.protocol.policy.Mode;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.Selector;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.error.YAMLException;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Turns an envoyproxy/ratelimit configuration (one YAML document: a domain and its nested
 * descriptors) into policies with envoy selectors (docs/envoy.md, "Migrating"). Every descriptor
 * with a {@code rate_limit} becomes one policy selecting the entries on its path from the top;
 * what has no equivalent here is reported field by field, never dropped silently.
 */
final class EnvoyConfigImport
{
    /** Keys a configuration's top level may have. */
    private static final Set<String> TOP_KEYS = Set.of("domain", "descriptors");
    private static final Set<String> DESCRIPTOR_KEYS = Set.of("key", "value", "rate_limit", "descriptors", "shadow_mode", "detailed_metric");
    private static final Set<String> RATE_LIMIT_KEYS = Set.of("unit", "requests_per_unit", "unlimited", "name", "replaces");
    /** What "unlimited: true" becomes: a bucket no caller empties (a trillion a second). */
    static final long UNLIMITED_RATE = 1_000_000_000_000L;
    private static final int MAX_ID_LENGTH = 63;
    /** Largest config accepted, in bytes; and YAML's own limits against alias bombs. */
    static final int MAX_CONFIG_BYTES = 4 * 1024 * 1024;

    /** The policies a configuration makes, or what is wrong with it. */
    record Result(String domain, List<Policy> policies, List<String> errors, List<String> notes)
    {
    }

    private final String source;
    private final String owner;
    private final List<Policy> policies = new ArrayList<>();
    private final List<String> errors = new ArrayList<>();
    private final List<String> notes = new ArrayList<>();
    private final Set<String> ids = new HashSet<>();
    private String domain = "";

    private EnvoyConfigImport(final String source, final String owner)
    {
        this.source = source;
        this.owner = owner;
    }

    /**
     * Converts one configuration.
     *
     * @param yaml   the file's text
     * @param source the file as the operator named it (in reasons and messages)
     * @param owner  the owner every policy gets
     */
    static Result convert(final String yaml, final String source, final String owner)
    {
        final EnvoyConfigImport conversion = new EnvoyConfigImport(source, owner);
        conversion.read(yaml);
        if (conversion.errors.isEmpty())
        {
            conversion.validate();
        }
        return new Result(conversion.domain, List.copyOf(conversion.policies), List.copyOf(conversion.errors), List.copyOf(conversion.notes));
    }

    private void read(final String yaml)
    {
        if (yaml.getBytes(StandardCharsets.UTF_8).length > MAX_CONFIG_BYTES)
        {
            errors.add("the file is larger than " + MAX_CONFIG_BYTES / (1024 * 1024) + " MiB");
            return;
        }
        final Object document;
        try
        {
            final LoaderOptions options = new LoaderOptions();
            options.setMaxAliasesForCollections(50);
            options.setAllowDuplicateKeys(false);
            document = new Yaml(new SafeConstructor(options)).load(yaml);
        }
        catch (final YAMLException e)
        {
            errors.add("not YAML: " + Output.oneLine(e.getMessage()));
            return;
        }
        if (!(document instanceof Map<?, ?> top))
        {
            errors.add("expected a mapping with 'domain' and 'descriptors' (an envoyproxy/ratelimit configuration), found " +
                (document == null ? "nothing" : kind(document)));
            return;
        }
        unknownKeys(top, TOP_KEYS, "", "domain, descriptors");
        final Object domainValue = top.get("domain");
        if (!(domainValue instanceof String d) || d.isBlank())
        {
            errors.add("domain: required, a non-empty string (the rate limit filter's domain)");
        }
        else
        {
            domain = d;
        }
        final Object descriptors = top.get("descriptors");
        if (descriptors == null)
        {
            errors.add("descriptors: required, a list (each with a key, and a rate_limit or nested descriptors)");
            return;
        }
        descriptorList(descriptors, "descriptors", new ArrayList<>(), false);
    }

    private void descriptorList(final Object value, final String where, final List<EnvoyEntry> parents, final boolean parentShadow)
    {
        if (!(value instanceof List<?> list))
        {
            errors.add(where + ": expected a list of descriptors, found " + kind(value));
            return;
        }
        for (int i = 0; i < list.size(); i++)
        {
            descriptor(list.get(i), where + "[" + i + "]", parents, parentShadow);
        }
    }

    private void descriptor(final Object value, final String where, final List<EnvoyEntry> parents, final boolean parentShadow)
    {
        if (!(value instanceof Map<?, ?> descriptor))
        {
            errors.add(where + ": expected a descriptor (key, value, rate_limit, descriptors), found " + kind(value));
            return;
        }
        unknownKeys(descriptor, DESCRIPTOR_KEYS, where + ".", "key, value, rate_limit, descriptors, shadow_mode, detailed_metric");
        final Object key = descriptor.get("key");
        if (!(key instanceof String k) || k.isEmpty())
        {
            errors.add(where + ".key: required, a non-empty string");
            return;
        }
        final Object rawValue = descriptor.get("value");
        String entryValue = "";
        if (rawValue != null)
        {
            if (!(rawValue instanceof String) && !(rawValue instanceof Number) && !(rawValue instanceof Boolean))
            {
                errors.add(where + ".value: expected a string, found " + kind(rawValue));
                return;
            }
            entryValue = String.valueOf(rawValue);
            if (entryValue.isEmpty())
            {
                errors.add(where + ".value: empty; leave value out to match any value");
                return;
            }
            if (entryValue.endsWith("*"))
            {
                errors.add(where + ".value: '" + entryValue + "' is a prefix wildcard, which policies cannot select; " +
                    "list each value as a descriptor of its own, or leave value out to match any value");
                return;
            }
        }
        final boolean shadow = parentShadow || Boolean.TRUE.equals(descriptor.get("shadow_mode"));
        if (descriptor.containsKey("shadow_mode") && !(descriptor.get("shadow_mode") instanceof Boolean))
        {
            errors.add(where + ".shadow_mode: expected true or false, found " + kind(descriptor.get("shadow_mode")));
        }
        if (descriptor.containsKey("detailed_metric"))
        {
            notes.add(where + ".detailed_metric: ignored (every policy's decisions are counted per policy in limiter_decisions_total)");
        }
        final List<EnvoyEntry> entries = new ArrayList<>(parents);
        entries.add(EnvoyEntry.newBuilder().setKey(k).setValue(entryValue).build());
        if (entries.size() > EnvoyDescriptors.MAX_ENTRIES)
        {
            errors.add(where + ": nested " + entries.size() + " deep; a policy selects descriptors of at most " +
                EnvoyDescriptors.MAX_ENTRIES + " entries");
            return;
        }
        final Object rateLimit = descriptor.get("rate_limit");
        if (rateLimit != null)
        {
            policy(rateLimit, where + ".rate_limit", entries, shadow);
        }
        final Object children = descriptor.get("descriptors");
        if (children != null)
        {
            descriptorList(children, where + ".descriptors", entries, shadow);
        }
        if (rateLimit == null && children == null)
        {
            notes.add(where + " (" + describe(entries) + "): no rate_limit and no nested descriptors, so no limit; no policy made");
        }
    }

    private void policy(final Object value, final String where, final List<EnvoyEntry> entries, final boolean shadow)
    {
        if (!(value instanceof Map<?, ?> rateLimit))
        {
            errors.add(where + ": expected a mapping (unit, requests_per_unit), found " + kind(value));
            return;
        }
        unknownKeys(rateLimit, RATE_LIMIT_KEYS, where + ".", "unit, requests_per_unit, unlimited, name, replaces");
        if (rateLimit.containsKey("replaces"))
        {
            errors.add(where + ".replaces: not supported: here every descriptor is decided on its own, none cancels another's " +
                "limit; remove the replaced limit's descriptor from Envoy's actions, or merge the two limits into one policy");
            return;
        }
        final Object name = rateLimit.get("name");
        final Policy.Builder policy = Policy.newBuilder()
            .setId(id(name instanceof String n && !n.isBlank() ? n : domain + "." + describeForId(entries)))
            .setSelector(Selector.newBuilder().setEnvoy(EnvoyDescriptor.newBuilder().setDomain(domain).addAllEntries(entries)))
            .setOwner(owner)
            .setReason("imported from envoyproxy/ratelimit configuration " + source + " (" + where + ")");
        if (shadow)
        {
            policy.setMode(Mode.SHADOW);
        }
        if (Boolean.TRUE.equals(rateLimit.get("unlimited")))
        {
            if (rateLimit.containsKey("requests_per_unit") || rateLimit.containsKey("unit"))
            {
                errors.add(where + ": unlimited: true takes no unit or requests_per_unit");
                return;
            }
            // Selected (so a wider policy does not apply), never refused.
            policy.setRate(UNLIMITED_RATE).setPeriod(Duration.newBuilder().setSeconds(1)).setBurst(UNLIMITED_RATE)
                .setReason(policy.getReason() + ": unlimited");
            policies.add(policy.build());
            return;
        }
        final Object requests = rateLimit.get("requests_per_unit");
        if (!(requests instanceof Integer || requests instanceof Long) || ((Number)requests).longValue() < 1)
        {
            errors.add(where + ".requests_per_unit: required, a whole number of at least 1, was " +
                (requests == null ? "missing" : "'" + requests + "'"));
            return;
        }
        final Object unit = rateLimit.get("unit");
        final String unitName = unit instanceof String u ? u.toLowerCase(Locale.ROOT) : "";
        policy.setRate(((Number)requests).longValue()).setAlgorithm(Algorithm.FIXED_WINDOW);
        switch (unitName)
        {
            case "second" -> policy.setPeriod(seconds(1));
            case "minute" -> policy.setPeriod(seconds(60));
            case "hour" -> policy.setPeriod(seconds(3_600));
            case "day" -> policy.setPeriod(seconds(86_400));
            case "week" -> policy.setPeriod(seconds(7 * 86_400));
            case "month" -> policy.setCalendarWindow(CalendarWindow.MONTH);
            case "year" ->
            {
                errors.add(where + ".unit: year has no equivalent (windows go up to a calendar month); " +
                    "use month with a twelfth of the requests, or day with a 365th");
                return;
            }
            default ->
            {
                errors.add(where + ".unit: " + (unit == null ? "required" : "'" + unit + "' is not a unit") +
                    "; second, minute, hour, day, week or month");
                return;
            }
        }
        policies.add(policy.build());
    }

    /** The set the policies make must compile on its own: duplicate selectors and field limits are caught here. */
    private void validate()
    {
        try
        {
            PolicySetIndex.compile(PolicySet.newBuilder().addAllPolicies(policies).build(), null);
        }
        catch (final PolicyValidationException e)
        {
            for (final String error : e.errors())
            {
                errors.add(error + " (in the policies made from " + source + ")");
            }
        }
    }

    /** A policy id from a name: lower case, [a-z0-9._-], at most 63 characters, unique in this import. */
    private String id(final String name)
    {
        String id = name.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9._-]+", "-").replaceAll("^[^a-z0-9]+", "");
        if (id.isEmpty())
        {
            id = "envoy";
        }
        if (id.length() > MAX_ID_LENGTH)
        {
            // Cut, with a hash of the whole name so that two long names cut alike stay apart.
            id = id.substring(0, MAX_ID_LENGTH - 9) + "-" + String.format("%08x", name.hashCode());
        }
        String unique = id;
        for (int n = 2; !ids.add(unique); n++)
        {
            final String suffix = "-" + n;
            unique = (id.length() + suffix.length() > MAX_ID_LENGTH ? id.substring(0, MAX_ID_LENGTH - suffix.length()) : id) + suffix;
        }
        return unique;
    }

    private static String describeForId(final List<EnvoyEntry> entries)
    {
        final StringBuilder text = new StringBuilder();
        for (final EnvoyEntry entry : entries)
        {
            text.append(text.length() == 0 ? "" : ".").append(entry.getKey());
            if (!entry.getValue().isEmpty())
            {
                text.append('-').append(entry.getValue());
            }
        }
        return text.toString();
    }

    /** "remote_address=*, path=/login" */
    static String describe(final List<EnvoyEntry> entries)
    {
        final List<String> parts = new ArrayList<>();
        entries.forEach(e -> parts.add(e.getKey() + "=" + (e.getValue().isEmpty() ? "*" : e.getValue())));
        return String.join(", ", parts);
    }

    private void unknownKeys(final Map<?, ?> map, final Set<String> known, final String prefix, final String knownList)
    {
        for (final Object key : map.keySet())
        {
            if (!known.contains(String.valueOf(key)))
            {
                errors.add(prefix + key + ": unknown field (envoyproxy/ratelimit's are " + knownList + ")");
            }
        }
    }

    private static Duration seconds(final long seconds)
    {
        return Duration.newBuilder().setSeconds(seconds).build();
    }

    private static String kind(final Object value)
    {
        if (value instanceof Map)
        {
            return "a mapping";
        }
        if (value instanceof List)
        {
            return "a list";
        }
        return value instanceof String ? "the text '" + value + "'" : "'" + value + "'";
    }
}
