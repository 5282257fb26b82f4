package dev.limiter.cli;

import com.google.protobuf.Duration;
import dev.limiter.protocol.EnvoyDescriptors;
import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.PolicyValidationException;
import dev.limiter.protocol.policy.Algorithm;
import dev.limiter.protocol.policy.EnvoyDescriptor;
import dev.limiter.protocol.policy.EnvoyEntry;
import dev.limiter.protocol.policy.Mode;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.Selector;
import org.yaml.snakeyaml.DumperOptions;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.error.YAMLException;
import org.yaml.snakeyaml.nodes.Tag;
import org.yaml.snakeyaml.representer.Representer;
import org.yaml.snakeyaml.resolver.Resolver;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Turns an envoyproxy/ratelimit configuration (one YAML document: a domain and its nested
 * descriptors) into policies with envoy selectors (docs/envoy.md, "Migrating"). Every descriptor
 * with a {@code rate_limit} becomes one policy selecting the entries on its path from the top;
 * what has no equivalent here is reported field by field, never dropped silently.
 *
 * <p>The YAML is read as envoyproxy/ratelimit reads it (yaml.v2 into string, bool and uint32
 * fields): keys, values, the domain, names and units are the scalar's own text ({@code 010},
 * {@code 2.10}, {@code on} stay as written), only a plain {@code ~}, {@code null} or nothing is
 * empty; booleans and whole numbers are read only where the field is one.
 */
final class EnvoyConfigImport
{
    /** Keys a configuration's top level may have. */
    private static final Set<String> TOP_KEYS = Set.of("domain", "descriptors");
    private static final Set<String> DESCRIPTOR_KEYS = Set.of("key", "value", "rate_limit", "descriptors", "shadow_mode", "quota_mode",
        "detailed_metric", "value_to_metric", "share_threshold", "metadata");
    private static final String DESCRIPTOR_KEY_LIST =
        "key, value, rate_limit, descriptors, shadow_mode, quota_mode, detailed_metric, value_to_metric, share_threshold, metadata";
    private static final Set<String> RATE_LIMIT_KEYS = Set.of("unit", "requests_per_unit", "unlimited", "name", "replaces");
    /**
     * envoyproxy/ratelimit's units (the v3 API's {@code RateLimit.Unit}, read upper-cased there) and
     * its windows for them in seconds: fixed windows counted from the Unix epoch, none calendar-based
     * (a month is 30 days, a year 365; src/utils/utilities.go, UnitToDivider).
     */
    static final Map<String, Long> UNIT_SECONDS = Map.of("SECOND", 1L, "MINUTE", 60L, "HOUR", 60L * 60, "DAY", 60L * 60 * 24,
        "WEEK", 60L * 60 * 24 * 7, "MONTH", 60L * 60 * 24 * 30, "YEAR", 60L * 60 * 24 * 365);
    /** The most requests_per_unit can say there (a uint32). */
    static final long MAX_REQUESTS_PER_UNIT = 0xFFFF_FFFFL;
    /** yaml.v2's booleans (YAML 1.1), as envoyproxy/ratelimit reads its bool fields. */
    private static final Set<String> TRUE = Set.of("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON");
    private static final Set<String> FALSE = Set.of("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF");
    private static final int MAX_ID_LENGTH = 63;
    /** Largest config accepted, in bytes; and YAML's own limits against alias bombs. */
    static final int MAX_CONFIG_BYTES = 4 * 1024 * 1024;

    /**
     * The policies a configuration makes, or what is wrong with it.
     *
     * @param names     each rate_limit {@code name} -> the ids of the policies made from limits of that name
     * @param replacing every {@code replaces} entry, by the policy it belongs to; those that name a limit of
     *                  this file are already in the policy's {@code replaces} (as its ids)
     */
    record Result(String source, String domain, List<Policy> policies, List<String> errors, List<String> notes,
        Map<String, List<String>> names, List<Replacing> replacing)
    {
    }

    /** One {@code replaces} entry: the policy (by id) whose rate_limit lists {@code name}, and where. */
    record Replacing(String policyId, String name, String where)
    {
    }

    private final String source;
    private final String owner;
    private final List<Policy> policies = new ArrayList<>();
    private final List<String> errors = new ArrayList<>();
    private final List<String> notes = new ArrayList<>();
    private final Set<String> ids = new HashSet<>();
    private final Map<String, List<String>> names = new LinkedHashMap<>();
    private final List<Replacing> replacing = new ArrayList<>();
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
            conversion.replacesInFile();
            conversion.validate();
        }
        final Map<String, List<String>> names = new LinkedHashMap<>();
        conversion.names.forEach((name, ids) -> names.put(name, List.copyOf(ids)));
        return new Result(source, conversion.domain, List.copyOf(conversion.policies), List.copyOf(conversion.errors),
            List.copyOf(conversion.notes), names, List.copyOf(conversion.replacing));
    }

    /** The YAML as a tree of maps, lists and strings (see the class comment), or null with an error. */
    private static Object load(final String yaml, final List<String> errors)
    {
        try
        {
            final LoaderOptions options = new LoaderOptions();
            options.setMaxAliasesForCollections(50);
            options.setAllowDuplicateKeys(false);
            options.setCodePointLimit(MAX_CONFIG_BYTES);
            final DumperOptions dumping = new DumperOptions();
            return new Yaml(new SafeConstructor(options), new Representer(dumping), dumping, options, new LiteralResolver()).load(yaml);
        }
        catch (final YAMLException e)
        {
            errors.add("not YAML: " + Output.oneLine(e.getMessage()));
            return null;
        }
    }

    /**
     * Resolves no implicit type but null (a plain {@code ~}, {@code null}, {@code Null}, {@code NULL}
     * or nothing, as yaml.v2 has them) and the merge key: every other plain scalar stays its text.
     */
    private static final class LiteralResolver extends Resolver
    {
        @Override
        protected void addImplicitResolvers()
        {
            addImplicitResolver(Tag.NULL, NULL, "~nN\0");
            addImplicitResolver(Tag.NULL, EMPTY, null);
            addImplicitResolver(Tag.MERGE, MERGE, "<");
        }
    }

    private void read(final String yaml)
    {
        if (yaml.getBytes(StandardCharsets.UTF_8).length > MAX_CONFIG_BYTES)
        {
            errors.add("the file is larger than " + MAX_CONFIG_BYTES / (1024 * 1024) + " MiB");
            return;
        }
        final int before = errors.size();
        final Object document = load(yaml, errors);
        if (errors.size() > before)
        {
            return;
        }
        if (!(document instanceof Map<?, ?> top))
        {
            errors.add("expected a mapping with 'domain' and 'descriptors' (an envoyproxy/ratelimit configuration), found " +
                (document == null ? "nothing" : kind(document)));
            return;
        }
        unknownKeys(top, TOP_KEYS, "", "the top level's are domain, descriptors");
        final String d = text(top, "domain", "");
        if (d != null && d.isEmpty())
        {
            errors.add("domain: required, a non-empty string (the rate limit filter's domain)");
        }
        else if (d != null)
        {
            domain = d;
        }
        final Object descriptors = top.get("descriptors");
        if (descriptors == null)
        {
            errors.add("descriptors: required, a list (each with a key, and a rate_limit or nested descriptors)");
            return;
        }
        descriptorList(descriptors, "descriptors", new ArrayList<>());
    }

    private void descriptorList(final Object value, final String where, final List<EnvoyEntry> parents)
    {
        if (!(value instanceof List<?> list))
        {
            errors.add(where + ": expected a list of descriptors, found " + kind(value));
            return;
        }
        for (int i = 0; i < list.size(); i++)
        {
            descriptor(list.get(i), where + "[" + i + "]", parents);
        }
    }

    private void descriptor(final Object value, final String where, final List<EnvoyEntry> parents)
    {
        if (!(value instanceof Map<?, ?> descriptor))
        {
            errors.add(where + ": expected a descriptor (key, value, rate_limit, descriptors), found " + kind(value));
            return;
        }
        unknownKeys(descriptor, DESCRIPTOR_KEYS, where + ".", "a descriptor's are " + DESCRIPTOR_KEY_LIST);
        final String key = text(descriptor, "key", where);
        final String entryValue = text(descriptor, "value", where);
        if (key == null || entryValue == null)
        {
            return;
        }
        if (key.isEmpty())
        {
            errors.add(where + ".key: required, a non-empty string");
            return;
        }
        if (key.indexOf('*') >= 0 || entryValue.indexOf('*') >= 0)
        {
            final String field = entryValue.indexOf('*') >= 0 ? "value" : "key";
            errors.add(where + "." + field + ": '" + (field.equals("value") ? entryValue : key) + "' contains '*', which " +
                "envoyproxy/ratelimit matches as a wildcard (each '*' any run of characters, none included, over the descriptor's " +
                "key_value); policies select exact keys and values only: list each value as a descriptor of its own, or leave " +
                "value out to match any value");
            return;
        }
        final boolean shadow = flag(descriptor, "shadow_mode", where);
        final boolean quota = flag(descriptor, "quota_mode", where);
        if (flag(descriptor, "share_threshold", where))
        {
            // As envoyproxy/ratelimit: "share_threshold can only be used with wildcard values".
            errors.add(where + ".share_threshold: only with a wildcard value (containing '*'), and there is none here; " +
                "envoyproxy/ratelimit refuses it too: remove share_threshold");
        }
        if (flag(descriptor, "detailed_metric", where))
        {
            notes.add(where + ".detailed_metric: ignored (every policy's decisions are counted per policy in limiter_decisions_total)");
        }
        if (flag(descriptor, "value_to_metric", where))
        {
            notes.add(where + ".value_to_metric: ignored (it names envoyproxy/ratelimit's metrics; here every policy's decisions " +
                "are counted per policy in limiter_decisions_total, and ./limiter hot-keys shows the values)");
        }
        if (descriptor.containsKey("metadata"))
        {
            notes.add(where + ".metadata: ignored (envoyproxy/ratelimit returns it in the response's dynamic_metadata when " +
                "RESPONSE_DYNAMIC_METADATA is on; the gateway does not)");
        }
        final List<EnvoyEntry> entries = new ArrayList<>(parents);
        entries.add(EnvoyEntry.newBuilder().setKey(key).setValue(entryValue).build());
        if (entries.size() > EnvoyDescriptors.MAX_ENTRIES)
        {
            errors.add(where + ": nested " + entries.size() + " deep; a policy selects descriptors of at most " +
                EnvoyDescriptors.MAX_ENTRIES + " entries");
            return;
        }
        final Object rateLimit = descriptor.get("rate_limit");
        if (rateLimit != null)
        {
            policy(rateLimit, where, entries, shadow, quota);
        }
        else
        {
            // envoyproxy/ratelimit reads these two only beside a rate_limit, and passes neither down.
            if (shadow)
            {
                notes.add(where + ".shadow_mode: does nothing without a rate_limit (as in envoyproxy/ratelimit: nested descriptors " +
                    "do not inherit it; give each limit its own shadow_mode)");
            }
            if (quota)
            {
                notes.add(where + ".quota_mode: does nothing without a rate_limit (as in envoyproxy/ratelimit: nested descriptors " +
                    "do not inherit it)");
            }
        }
        final Object children = descriptor.get("descriptors");
        if (children != null)
        {
            descriptorList(children, where + ".descriptors", entries);
        }
        if (rateLimit == null && (children == null || children instanceof List<?> none && none.isEmpty()))
        {
            notes.add(where + " (" + describe(entries) + "): no rate_limit and no nested descriptors, so no limit; no policy made");
        }
    }

    /** The rate_limit of the descriptor at {@code descriptorWhere}, selecting {@code entries}. */
    private void policy(final Object value, final String descriptorWhere, final List<EnvoyEntry> entries, final boolean shadow,
        final boolean quota)
    {
        final String where = descriptorWhere + ".rate_limit";
        if (!(value instanceof Map<?, ?> rateLimit))
        {
            errors.add(where + ": expected a mapping (unit, requests_per_unit), found " + kind(value));
            return;
        }
        unknownKeys(rateLimit, RATE_LIMIT_KEYS, where + ".", "a rate_limit's are unit, requests_per_unit, unlimited, name, replaces");
        if (quota)
        {
            errors.add(descriptorWhere + ".quota_mode: no equivalent (there, an over-limit quota descriptor refuses the request only " +
                "when every quota descriptor of it is over); remove quota_mode to enforce the limit, or use shadow_mode: true to " +
                "count without refusing");
        }
        final String name = text(rateLimit, "name", where);
        final boolean unlimited = flag(rateLimit, "unlimited", where);
        final String unit = text(rateLimit, "unit", where);
        final Map<String, String> replaces = replaces(rateLimit.get("replaces"), where + ".replaces", name);
        if (name == null || unit == null || replaces == null)
        {
            return;
        }
        final Policy.Builder policy = Policy.newBuilder()
            .setId(id(!name.isBlank() ? name : domain + "." + describeForId(entries)))
            .setSelector(Selector.newBuilder().setEnvoy(EnvoyDescriptor.newBuilder().setDomain(domain).addAllEntries(entries)))
            .setOwner(owner)
            .setReason("imported from envoyproxy/ratelimit configuration " + source + " (" + where + ")");
        if (unlimited)
        {
            if (!unit.isEmpty())
            {
                errors.add(where + ".unit: '" + unit + "' with unlimited: true; envoyproxy/ratelimit refuses it too (\"should not " +
                    "specify rate limit unit when unlimited\"): remove unit");
                return;
            }
            if (rateLimit.get("requests_per_unit") != null)
            {
                notes.add(where + ".requests_per_unit: ignored beside unlimited: true (as in envoyproxy/ratelimit)");
            }
            if (shadow)
            {
                notes.add(descriptorWhere + ".shadow_mode: an unlimited limit never refuses, so there is nothing to shadow (nor in " +
                    "envoyproxy/ratelimit); imported as unlimited");
            }
            // Selected (so that a wider policy does not apply to these descriptors), never charged.
            policy.setUnlimited(true).setReason(policy.getReason() + ": unlimited");
        }
        else
        {
            final long requests = requestsPerUnit(rateLimit.get("requests_per_unit"), where + ".requests_per_unit");
            final Long seconds = UNIT_SECONDS.get(unit.toUpperCase(Locale.ROOT));
            if (seconds == null)
            {
                errors.add(where + ".unit: " + (unit.isEmpty() ? "required" : "'" + unit + "' is not a unit") +
                    "; second, minute, hour, day, week, month or year (in any case)");
            }
            if (requests < 0 || seconds == null)
            {
                return;
            }
            policy.setRate(requests).setAlgorithm(Algorithm.FIXED_WINDOW).setPeriod(Duration.newBuilder().setSeconds(seconds));
            if (shadow)
            {
                policy.setMode(Mode.SHADOW);
            }
        }
        policies.add(policy.build());
        if (!name.isEmpty())
        {
            names.computeIfAbsent(name, n -> new ArrayList<>()).add(policy.getId());
        }
        replaces.forEach((replaced, at) -> replacing.add(new Replacing(policy.getId(), replaced, at)));
    }

    /** The names a {@code replaces} lists, each with where it first is (envoyproxy/ratelimit's checks), or null after an error. */
    private Map<String, String> replaces(final Object value, final String where, final String ownName)
    {
        if (value == null)
        {
            return Map.of();
        }
        if (!(value instanceof List<?> list))
        {
            errors.add(where + ": expected a list of {name: <another rate_limit's name>}, found " + kind(value));
            return null;
        }
        final Map<String, String> replaced = new LinkedHashMap<>();
        boolean ok = true;
        for (int i = 0; i < list.size(); i++)
        {
            final String at = where + "[" + i + "]";
            if (!(list.get(i) instanceof Map<?, ?> entry))
            {
                errors.add(at + ": expected {name: <another rate_limit's name>}, found " + kind(list.get(i)));
                ok = false;
                continue;
            }
            unknownKeys(entry, Set.of("name"), at + ".", "a replaces entry has only name");
            final String name = text(entry, "name", at);
            if (name == null)
            {
                ok = false;
            }
            else if (name.isEmpty())
            {
                errors.add(at + ".name: required; envoyproxy/ratelimit refuses it too (\"should not have an empty replaces entry\")");
                ok = false;
            }
            else if (name.equals(ownName))
            {
                errors.add(at + ".name: '" + name + "' is this rate_limit's own name; a limit cannot replace itself (envoyproxy/" +
                    "ratelimit refuses it too: \"replaces should not contain name of same descriptor\")");
                ok = false;
            }
            else
            {
                replaced.putIfAbsent(name, at + ".name");
            }
        }
        return ok ? replaced : null;
    }

    /** The replaces entries that name limits of this file become those limits' policy ids. */
    private void replacesInFile()
    {
        for (final Replacing entry : replacing)
        {
            final List<String> replaced = names.get(entry.name());
            if (replaced == null)
            {
                continue;
            }
            for (int i = 0; i < policies.size(); i++)
            {
                final Policy policy = policies.get(i);
                if (policy.getId().equals(entry.policyId()))
                {
                    final Set<String> all = new LinkedHashSet<>(policy.getReplacesList());
                    all.addAll(replaced);
                    policies.set(i, policy.toBuilder().clearReplaces().addAllReplaces(all).build());
                }
            }
        }
    }

    /** requests_per_unit as envoyproxy/ratelimit's uint32, or -1 after an error. */
    private long requestsPerUnit(final Object value, final String where)
    {
        final String text = value instanceof String s ? s.replace("_", "") :
            value instanceof Integer || value instanceof Long || value instanceof BigInteger ? value.toString() : null;
        long requests = -1;
        String why = "a whole number";
        if (text != null)
        {
            try
            {
                if (text.length() > 1 && text.charAt(0) == '0' && Character.isDigit(text.charAt(1)))
                {
                    // yaml.v2 reads 010 as octal (8): say so rather than guess which was meant.
                    why = "a whole number without a leading zero (envoyproxy/ratelimit's YAML reads a leading zero as octal: " +
                        "'010' is 8 there); write the number meant";
                }
                else if (text.length() > 2 && text.charAt(0) == '0' && "xXoObB".indexOf(text.charAt(1)) >= 0)
                {
                    final char radix = Character.toLowerCase(text.charAt(1));
                    requests = Long.parseLong(text.substring(2), radix == 'x' ? 16 : radix == 'o' ? 8 : 2);
                }
                else if (text.matches("\\+?[0-9]+"))
                {
                    requests = Long.parseLong(text.startsWith("+") ? text.substring(1) : text);
                }
            }
            catch (final NumberFormatException e)
            {
                requests = -1;
            }
        }
        if (requests >= 1 && requests <= MAX_REQUESTS_PER_UNIT)
        {
            return requests;
        }
        if (requests == 0)
        {
            why = "at least 1 (0, which envoyproxy/ratelimit answers OVER_LIMIT every time, has no equivalent; refuse these " +
                "descriptors in Envoy instead)";
        }
        else if (requests > MAX_REQUESTS_PER_UNIT)
        {
            why = "at most " + MAX_REQUESTS_PER_UNIT + " (a uint32 in envoyproxy/ratelimit)";
        }
        errors.add(where + ": " + (value == null ? "required, a whole number of at least 1" : why + ", was " + kind(value)));
        return -1;
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

    /** A policy id from a name (see {@link #idOf}), unique in this import. */
    private String id(final String name)
    {
        final String id = idOf(name);
        String unique = id;
        for (int n = 2; !ids.add(unique); n++)
        {
            final String suffix = "-" + n;
            unique = (id.length() + suffix.length() > MAX_ID_LENGTH ? id.substring(0, MAX_ID_LENGTH - suffix.length()) : id) + suffix;
        }
        return unique;
    }

    /**
     * The policy id a rate_limit name becomes: lower case, runs of other characters than
     * [a-z0-9._-] as one '-', leading punctuation dropped, at most 63 characters (a longer one cut,
     * with a hash of the whole name). The first limit of a name gets it; later ones get "-2", "-3"...
     */
    static String idOf(final String name)
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
        return id;
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

    /**
     * A string field as envoyproxy/ratelimit reads it: the scalar's text, or "" when absent, a plain
     * {@code ~}, {@code null} or nothing. Null after an error (a list, a mapping, an explicitly tagged
     * non-string).
     */
    private String text(final Map<?, ?> map, final String field, final String where)
    {
        final Object value = map.get(field);
        if (value == null || value instanceof String)
        {
            return value == null ? "" : (String)value;
        }
        errors.add(at(where, field) + ": expected text, found " + kind(value));
        return null;
    }

    /** A bool field as yaml.v2 reads one (true/false, yes/no, on/off, y/n in three cases); absent or null: false. */
    private boolean flag(final Map<?, ?> map, final String field, final String where)
    {
        final Object value = map.get(field);
        if (value == null || value instanceof Boolean)
        {
            return Boolean.TRUE.equals(value);
        }
        if (value instanceof String s && (TRUE.contains(s) || FALSE.contains(s)))
        {
            return TRUE.contains(s);
        }
        errors.add(at(where, field) + ": expected true or false, found " + kind(value));
        return false;
    }

    private static String at(final String where, final String field)
    {
        return where.isEmpty() ? field : where + "." + field;
    }

    private void unknownKeys(final Map<?, ?> map, final Set<String> known, final String prefix, final String knownList)
    {
        for (final Object key : map.keySet())
        {
            if (!known.contains(String.valueOf(key)))
            {
                errors.add(prefix + key + ": unknown field (envoyproxy/ratelimit's: " + knownList + ")");
            }
        }
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
