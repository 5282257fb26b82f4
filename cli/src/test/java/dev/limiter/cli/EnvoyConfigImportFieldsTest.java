package dev.limiter.cli;

import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.policy.Algorithm;
import dev.limiter.protocol.policy.CalendarWindow;
import dev.limiter.protocol.policy.Consistency;
import dev.limiter.protocol.policy.EmergencyBudget;
import dev.limiter.protocol.policy.EnvoyDescriptor;
import dev.limiter.protocol.policy.EnvoyEntry;
import dev.limiter.protocol.policy.Mode;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.Selector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One test per row of docs/envoy.md's table of envoyproxy/ratelimit's fields ("Migrating from
 * envoyproxy/ratelimit"): each field as that service reads it, and what it becomes here.
 */
class EnvoyConfigImportFieldsTest
{
    private static EnvoyConfigImport.Result convert(final String yaml)
    {
        return EnvoyConfigImport.convert(yaml, "f.yaml", "t");
    }

    private static Map<String, Policy> byId(final EnvoyConfigImport.Result result)
    {
        assertEquals(List.of(), result.errors());
        return result.policies().stream().collect(Collectors.toMap(Policy::getId, Function.identity()));
    }

    private static Policy only(final String yaml)
    {
        final EnvoyConfigImport.Result result = convert(yaml);
        assertEquals(List.of(), result.errors());
        assertEquals(1, result.policies().size(), result.policies().toString());
        return result.policies().get(0);
    }

    private static String errors(final String yaml)
    {
        final EnvoyConfigImport.Result result = convert(yaml);
        assertFalse(result.errors().isEmpty(), "expected errors, made " + result.policies());
        return String.join("\n", result.errors());
    }

    private static String notes(final EnvoyConfigImport.Result result)
    {
        return String.join("\n", result.notes());
    }

    private static EnvoyEntry entry(final String key, final String value)
    {
        return EnvoyEntry.newBuilder().setKey(key).setValue(value).build();
    }

    // ---- domain

    @Test
    void domainIsTheSelectorsDomainKeptAsWrittenAndRequired()
    {
        assertEquals("2.10", only("domain: 2.10\ndescriptors: [ { key: k, rate_limit: { unit: second, requests_per_unit: 1 } } ]\n")
            .getSelector().getEnvoy().getDomain());
        for (final String missing : List.of("", "domain: ~\n", "domain: ''\n"))
        {
            assertTrue(errors(missing + "descriptors: []\n").contains("domain: required, a non-empty string"), missing);
        }
        assertTrue(errors("domain: [a]\ndescriptors: []\n").contains("domain: expected text, found a list"));
    }

    // ---- descriptors, nesting

    @Test
    void descriptorsNestAndEachPolicySelectsItsPathFromTheTopAtMostFiveDeep()
    {
        final Policy leaf = only("""
            domain: d
            descriptors:
              - key: a
                value: x
                descriptors:
                  - key: b
                    descriptors:
                      - key: c
                        value: z
                        rate_limit: { unit: second, requests_per_unit: 1 }
            """);
        assertEquals(List.of(entry("a", "x"), entry("b", ""), entry("c", "z")), leaf.getSelector().getEnvoy().getEntriesList());
        assertTrue(errors("""
            domain: d
            descriptors:
              - key: l1
                descriptors: [ { key: l2, descriptors: [ { key: l3, descriptors: [ { key: l4, descriptors: [ { key: l5, descriptors: [
                  { key: l6, rate_limit: { unit: second, requests_per_unit: 1 } } ] } ] } ] } ] } ]
            """).contains("nested 6 deep; a policy selects descriptors of at most 5 entries"));
        assertTrue(errors("domain: d\ndescriptors: { key: k }\n").contains("descriptors: expected a list of descriptors, found a mapping"));
    }

    // ---- key

    @Test
    void keyIsRequiredAndKeptAsWritten()
    {
        assertEquals(entry("Remote_Address", ""), only("domain: d\ndescriptors: [ { key: Remote_Address, rate_limit: { unit: second, " +
            "requests_per_unit: 1 } } ]\n").getSelector().getEnvoy().getEntries(0));
        for (final String key : List.of("", "key: ~, ", "key: null, ", "key: '', "))
        {
            assertTrue(errors("domain: d\ndescriptors: [ { " + key + "rate_limit: { unit: second, requests_per_unit: 1 } } ]\n")
                .contains("descriptors[0].key: required, a non-empty string"), key);
        }
    }

    // ---- value

    @ParameterizedTest(name = "value: {0}")
    @ValueSource(strings = {"", "value: ~, ", "value: null, ", "value: NULL, ", "value: , ", "value: '', "})
    void valueLeftOutNullOrEmptyMatchesAnyValue(final String value)
    {
        assertEquals(entry("k", ""), only("domain: d\ndescriptors: [ { key: k, " + value +
            "rate_limit: { unit: second, requests_per_unit: 1 } } ]\n").getSelector().getEnvoy().getEntries(0));
    }

    // ---- keys and values as their literal text (YAML 1.1 coercion must not change them)

    @ParameterizedTest(name = "{0} is the text ''{1}''")
    @CsvSource(delimiter = '|', quoteCharacter = '"', value = {
        "010        | 010",
        "0x1F       | 0x1F",
        "2.10       | 2.10",
        "1e3        | 1e3",
        "on         | on",
        "yes        | yes",
        "no         | no",
        "Off        | Off",
        "'~'        | ~",
        "'null'     | null",
        "'010'      | 010",
        "2001-12-14 | 2001-12-14",
        ".inf       | .inf",
        "1_000      | 1_000"})
    void keysAndValuesAreKeptAsTheirLiteralText(final String yaml, final String text)
    {
        final EnvoyDescriptor asValue = only("domain: d\ndescriptors:\n  - key: k\n    value: " + yaml +
            "\n    rate_limit: { unit: second, requests_per_unit: 1 }\n").getSelector().getEnvoy();
        assertEquals(entry("k", text), asValue.getEntries(0));
        final EnvoyDescriptor asKey = only("domain: d\ndescriptors:\n  - key: " + yaml +
            "\n    rate_limit: { unit: second, requests_per_unit: 1 }\n").getSelector().getEnvoy();
        assertEquals(entry(text, ""), asKey.getEntries(0));
    }

    @Test
    void valuesThatYaml11WouldReadAsTheSameNumberStayApart()
    {
        // 2.10 and 2.1 (and 010 and 8, on and true) were one float, one int, one boolean: duplicate selectors.
        final Map<String, Policy> policies = byId(convert("""
            domain: d
            descriptors:
              - { key: version, value: 2.10, rate_limit: { unit: second, requests_per_unit: 1 } }
              - { key: version, value: 2.1, rate_limit: { unit: second, requests_per_unit: 2 } }
              - { key: n, value: 010, rate_limit: { unit: second, requests_per_unit: 3 } }
              - { key: n, value: 8, rate_limit: { unit: second, requests_per_unit: 4 } }
              - { key: flag, value: on, rate_limit: { unit: second, requests_per_unit: 5 } }
              - { key: flag, value: true, rate_limit: { unit: second, requests_per_unit: 6 } }
            """));
        assertEquals(6, policies.size(), policies.keySet().toString());
        assertEquals("2.10", policies.get("d.version-2.10").getSelector().getEnvoy().getEntries(0).getValue());
        assertEquals("010", policies.get("d.n-010").getSelector().getEnvoy().getEntries(0).getValue());
        assertEquals("on", policies.get("d.flag-on").getSelector().getEnvoy().getEntries(0).getValue());
    }

    // ---- wildcard values

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"key: path, value: /api/*", "key: path, value: 'a*b'", "key: path, value: '*'", "key: 'pa*th'"})
    void aStarInAValueOrKeyIsAWildcardThereAndAnErrorHere(final String descriptor)
    {
        final String all = errors("domain: d\ndescriptors: [ { " + descriptor + ", rate_limit: { unit: second, requests_per_unit: 1 } } ]\n");
        assertTrue(all.matches("(?s)descriptors\\[0]\\.(key|value): '[^']*' contains '\\*', which envoyproxy/ratelimit matches as a " +
            "wildcard \\(each '\\*' any run of characters, none included.*policies select exact keys and values only.*"), all);
    }

    // ---- rate_limit

    @Test
    void rateLimitMakesOnePolicyAndADescriptorWithoutOneOrChildrenIsANote()
    {
        final EnvoyConfigImport.Result result = convert("""
            domain: d
            descriptors:
              - { key: a, rate_limit: { unit: second, requests_per_unit: 1 } }
              - { key: b }
              - { key: c, rate_limit: ~ }
              - { key: e, descriptors: [] }
            """);
        assertEquals(1, byId(result).size());
        assertTrue(notes(result).contains("descriptors[1] (b=*): no rate_limit and no nested descriptors, so no limit"), notes(result));
        assertTrue(notes(result).contains("descriptors[2] (c=*): no rate_limit"), notes(result));
        assertTrue(notes(result).contains("descriptors[3] (e=*): no rate_limit"), notes(result));
        assertTrue(errors("domain: d\ndescriptors: [ { key: a, rate_limit: 5 } ]\n")
            .contains("descriptors[0].rate_limit: expected a mapping (unit, requests_per_unit), found the text '5'"));
    }

    // ---- requests_per_unit

    @ParameterizedTest(name = "requests_per_unit: {0}")
    @CsvSource(delimiter = '|', value = {"1 | 1", "500 | 500", "1_000 | 1000", "0x1F | 31", "'25' | 25", "+7 | 7",
        "4294967295 | 4294967295"})
    void requestsPerUnitIsTheRateAsAWholeNumber(final String yaml, final long rate)
    {
        assertEquals(rate, only("domain: d\ndescriptors: [ { key: k, rate_limit: { unit: second, requests_per_unit: " + yaml +
            " } } ]\n").getRate());
    }

    @ParameterizedTest(name = "requests_per_unit: {0}")
    @CsvSource(delimiter = '|', value = {
        "010 | a whole number without a leading zero (envoyproxy/ratelimit's YAML reads a leading zero as octal: '010' is 8 there)",
        "2.5 | a whole number, was the text '2.5'",
        "1e3 | a whole number, was the text '1e3'",
        "-3 | a whole number, was the text '-3'",
        "0 | at least 1 (0, which envoyproxy/ratelimit answers OVER_LIMIT every time, has no equivalent",
        "4294967296 | at most 4294967295 (a uint32 in envoyproxy/ratelimit)",
        "ten | a whole number, was the text 'ten'",
        "~ | required, a whole number of at least 1"})
    void requestsPerUnitThatIsNoWholeNumberIsAnErrorNamingIt(final String yaml, final String why)
    {
        final String all = errors("domain: d\ndescriptors: [ { key: k, rate_limit: { unit: second, requests_per_unit: " + yaml + " } } ]\n");
        assertTrue(all.contains("descriptors[0].rate_limit.requests_per_unit: " + why), all);
    }

    // ---- unit: every unit of the v3 API, fixed windows from the Unix epoch as envoyproxy/ratelimit counts them

    @ParameterizedTest(name = "unit: {0}")
    @CsvSource({"second, 1", "minute, 60", "hour, 3600", "day, 86400", "week, 604800", "month, 2592000", "year, 31536000",
        "SECOND, 1", "Month, 2592000", "YEAR, 31536000"})
    void unitIsAFixedWindowOfEnvoysLength(final String unit, final long seconds)
    {
        final Policy policy = only("domain: d\ndescriptors: [ { key: k, rate_limit: { unit: " + unit + ", requests_per_unit: 3 } } ]\n");
        assertEquals(Algorithm.FIXED_WINDOW, policy.getAlgorithm());
        assertEquals(seconds, policy.getPeriod().getSeconds());
        assertEquals(CalendarWindow.CALENDAR_WINDOW_UNSPECIFIED, policy.getCalendarWindow(), "none is calendar-based there");
        assertEquals(3, policy.getRate());
        // The set compiles: the longest window (365 days) is within the 366 days a period may have.
        PolicySetIndex.compile(PolicySet.newBuilder().addPolicies(policy).build(), null);
    }

    @ParameterizedTest(name = "unit: {0}")
    @ValueSource(strings = {"fortnight", "unknown", "'1'", "seconds"})
    void unitThatIsNoneOfTheApisIsAnError(final String unit)
    {
        final String all = errors("domain: d\ndescriptors: [ { key: k, rate_limit: { unit: " + unit + ", requests_per_unit: 3 } } ]\n");
        assertTrue(all.contains("descriptors[0].rate_limit.unit: '") &&
            all.contains("is not a unit; second, minute, hour, day, week, month or year (in any case)"), all);
        assertTrue(errors("domain: d\ndescriptors: [ { key: k, rate_limit: { requests_per_unit: 3 } } ]\n")
            .contains("descriptors[0].rate_limit.unit: required"));
    }

    // ---- unlimited

    @Test
    void unlimitedIsAPolicyWithNoLimit()
    {
        final Policy free = only("domain: d\ndescriptors: [ { key: user, value: admin, rate_limit: { unlimited: true } } ]\n");
        assertTrue(free.getUnlimited());
        assertEquals(0, free.getRate());
        assertFalse(free.hasPeriod());
        assertEquals(Algorithm.ALGORITHM_UNSPECIFIED, free.getAlgorithm());
        assertEquals(Mode.MODE_UNSPECIFIED, free.getMode());
        // unlimited: false is an ordinary limit.
        assertFalse(only("domain: d\ndescriptors: [ { key: k, rate_limit: { unlimited: false, unit: second, requests_per_unit: 1 } } ]\n")
            .getUnlimited());
    }

    @Test
    void unlimitedRefusesAUnitNotesAnIgnoredRequestsPerUnitAndHasNothingToShadow()
    {
        assertTrue(errors("domain: d\ndescriptors: [ { key: k, rate_limit: { unlimited: true, unit: Minute } } ]\n")
            .contains("descriptors[0].rate_limit.unit: 'Minute' with unlimited: true; envoyproxy/ratelimit refuses it too " +
                "(\"should not specify rate limit unit when unlimited\"): remove unit"));
        final EnvoyConfigImport.Result result = convert("""
            domain: d
            descriptors:
              - key: k
                shadow_mode: true
                rate_limit: { unlimited: true, requests_per_unit: 5 }
            """);
        final Policy free = byId(result).get("d.k");
        assertTrue(free.getUnlimited());
        assertEquals(Mode.MODE_UNSPECIFIED, free.getMode(), "validation refuses SHADOW with unlimited");
        assertTrue(notes(result).contains("descriptors[0].rate_limit.requests_per_unit: ignored beside unlimited: true"), notes(result));
        assertTrue(notes(result).contains("descriptors[0].shadow_mode: an unlimited limit never refuses, so there is nothing to shadow"),
            notes(result));
    }

    @Test
    void unlimitedOverALimitedClusterPolicyDropsWhatOnlyALimitHas()
    {
        final Policy now = Policy.newBuilder().setId("edge-admin").setOwner("t").setRate(10).setBurst(20)
            .setSelector(Selector.newBuilder().setEnvoy(EnvoyDescriptor.newBuilder().setDomain("d").addEntries(entry("user", "admin"))))
            .setConsistency(Consistency.STRICT).setEmergency(EmergencyBudget.newBuilder().setPercent(10)).build();
        final Policy free = only("domain: d\ndescriptors: [ { key: user, value: admin, rate_limit: { unlimited: true } } ]\n");
        final Policy updated = PolicyImportCommand.overlay(now, free);
        assertTrue(updated.getUnlimited());
        assertEquals("edge-admin", updated.getId());
        assertEquals(Consistency.STRICT, updated.getConsistency(), "what an unlimited policy may have stays");
        assertFalse(updated.hasEmergency());
        PolicySetIndex.compile(PolicySet.newBuilder().addPolicies(updated).build(), null);
        assertEquals("rate 10/1s -> unlimited", PolicyImportCommand.differences(now, updated));
    }

    // ---- name

    @Test
    void nameBecomesThePolicyIdAsAnIdCanBeWrittenAndASharedNameNumbersTheOthers()
    {
        final Map<String, Policy> policies = byId(convert("""
            domain: d
            descriptors:
              - { key: a, rate_limit: { name: login-attempts, unit: second, requests_per_unit: 1 } }
              - { key: b, rate_limit: { name: "Per User (EU)", unit: second, requests_per_unit: 1 } }
              - { key: c, rate_limit: { name: "Per User (EU)", unit: second, requests_per_unit: 1 } }
              - { key: e, rate_limit: { name: 010, unit: second, requests_per_unit: 1 } }
              - { key: f, rate_limit: { unit: second, requests_per_unit: 1 } }
            """));
        assertEquals(List.of("010", "d.f", "login-attempts", "per-user-eu-", "per-user-eu--2"), policies.keySet().stream().sorted().toList());
        assertEquals("per-user-eu-", EnvoyConfigImport.idOf("Per User (EU)"));
    }

    // ---- replaces

    static final String REPLACES = """
        domain: d
        descriptors:
          - { key: category, value: read, rate_limit: { name: reads, unit: minute, requests_per_unit: 100 } }
          - { key: category, value: write, rate_limit: { name: Per User, unit: minute, requests_per_unit: 10 } }
          - { key: user, rate_limit: { name: Per User, unit: minute, requests_per_unit: 50 } }
          - key: endpoint
            value: /hot
            rate_limit:
              name: hot
              unit: minute
              requests_per_unit: 1000
              replaces: [ { name: reads }, { name: Per User }, { name: reads }, { name: elsewhere } ]
        """;

    @Test
    void replacesBecomesTheIdsOfEveryLimitOfThatName()
    {
        final EnvoyConfigImport.Result result = convert(REPLACES);
        final Policy hot = byId(result).get("hot");
        assertEquals(List.of("reads", "per-user", "per-user-2"), hot.getReplacesList());
        assertEquals(List.of("per-user", "per-user-2"), result.names().get("Per User"));
        assertEquals(List.of(new EnvoyConfigImport.Replacing("hot", "reads", "descriptors[3].rate_limit.replaces[0].name"),
                new EnvoyConfigImport.Replacing("hot", "Per User", "descriptors[3].rate_limit.replaces[1].name"),
                new EnvoyConfigImport.Replacing("hot", "elsewhere", "descriptors[3].rate_limit.replaces[3].name")),
            result.replacing());
        // A name no limit of the files has: kept where the cluster has an envoy policy of that id and domain, else a note.
        final PolicySet cluster = PolicySet.newBuilder()
            .addPolicies(hot.toBuilder().clearReplaces().setId("elsewhere"))
            .addPolicies(hot.toBuilder().clearReplaces().setId("reads").setRate(7)).build();
        final List<String> notes = new ArrayList<>();
        final List<Policy> resolved = EnvoyReplaces.resolve(List.of(result), cluster, Map.of("reads", "d-reads-v1"), notes);
        assertEquals(List.of("d-reads-v1", "per-user", "per-user-2", "elsewhere"),
            resolved.stream().filter(p -> p.getId().equals("hot")).findFirst().orElseThrow().getReplacesList(),
            "an updated policy keeps the cluster's id, and replaces names it");
        assertEquals(List.of(), notes);
        final List<Policy> printed = EnvoyReplaces.resolve(List.of(result), null, Map.of(), notes);
        assertEquals(List.of("reads", "per-user", "per-user-2"),
            printed.stream().filter(p -> p.getId().equals("hot")).findFirst().orElseThrow().getReplacesList());
        assertEquals(1, notes.size(), notes.toString());
        assertTrue(notes.get(0).startsWith("f.yaml: descriptors[3].rate_limit.replaces[3].name: 'elsewhere' replaces nothing: no " +
            "rate_limit of domain 'd' in the files is named so, and --print asks no node"), notes.get(0));
    }

    @Test
    void replacesAcrossFilesOfOneDomainOnly()
    {
        final EnvoyConfigImport.Result first = convert(REPLACES);
        final EnvoyConfigImport.Result second = EnvoyConfigImport.convert(
            "domain: d\ndescriptors: [ { key: z, rate_limit: { name: elsewhere, unit: second, requests_per_unit: 1 } } ]\n", "g.yaml", "t");
        final EnvoyConfigImport.Result other = EnvoyConfigImport.convert(
            "domain: o\ndescriptors: [ { key: z, rate_limit: { name: reads, unit: second, requests_per_unit: 1 } } ]\n", "o.yaml", "t");
        final List<String> notes = new ArrayList<>();
        final List<Policy> resolved = EnvoyReplaces.resolve(List.of(first, second, other), PolicySet.getDefaultInstance(), Map.of(), notes);
        assertEquals(List.of("reads", "per-user", "per-user-2", "elsewhere"),
            resolved.stream().filter(p -> p.getId().equals("hot")).findFirst().orElseThrow().getReplacesList());
        assertEquals(List.of(), notes);
    }

    @Test
    void replacesWithAnEmptyNameOrItsOwnNameIsAnErrorAsThere()
    {
        final String all = errors("""
            domain: d
            descriptors:
              - { key: a, rate_limit: { name: a, unit: second, requests_per_unit: 1, replaces: [ { name: a } ] } }
              - { key: b, rate_limit: { unit: second, requests_per_unit: 1, replaces: [ {} ] } }
              - { key: c, rate_limit: { unit: second, requests_per_unit: 1, replaces: [ { name: ~ } ] } }
              - { key: e, rate_limit: { unit: second, requests_per_unit: 1, replaces: [ a ] } }
              - { key: f, rate_limit: { unit: second, requests_per_unit: 1, replaces: { name: a } } }
              - { key: g, rate_limit: { unit: second, requests_per_unit: 1, replaces: [ { name: a, unit: second } ] } }
            """);
        assertTrue(all.contains("descriptors[0].rate_limit.replaces[0].name: 'a' is this rate_limit's own name; a limit cannot " +
            "replace itself (envoyproxy/ratelimit refuses it too"), all);
        assertTrue(all.contains("descriptors[1].rate_limit.replaces[0].name: required; envoyproxy/ratelimit refuses it too " +
            "(\"should not have an empty replaces entry\")"), all);
        assertTrue(all.contains("descriptors[2].rate_limit.replaces[0].name: required"), all);
        assertTrue(all.contains("descriptors[3].rate_limit.replaces[0]: expected {name: <another rate_limit's name>}, found the text 'a'"),
            all);
        assertTrue(all.contains("descriptors[4].rate_limit.replaces: expected a list of {name: <another rate_limit's name>}, found a mapping"),
            all);
        assertTrue(all.contains("descriptors[5].rate_limit.replaces[0].unit: unknown field"), all);
    }

    // ---- shadow_mode

    @Test
    void shadowModeAppliesToItsOwnDescriptorOnly()
    {
        final EnvoyConfigImport.Result result = convert("""
            domain: d
            descriptors:
              - key: plan
                value: trial
                shadow_mode: true
                rate_limit: { unit: day, requests_per_unit: 100 }
                descriptors:
                  - key: user
                    rate_limit: { unit: minute, requests_per_unit: 10 }
              - key: tenant
                shadow_mode: true
                descriptors:
                  - key: user
                    rate_limit: { unit: minute, requests_per_unit: 10 }
            """);
        final Map<String, Policy> policies = byId(result);
        assertEquals(Mode.SHADOW, policies.get("d.plan-trial").getMode());
        assertEquals(Mode.MODE_UNSPECIFIED, policies.get("d.plan-trial.user").getMode(), "not inherited, as in envoyproxy/ratelimit");
        assertEquals(Mode.MODE_UNSPECIFIED, policies.get("d.tenant.user").getMode());
        assertTrue(notes(result).contains("descriptors[1].shadow_mode: does nothing without a rate_limit (as in envoyproxy/ratelimit: " +
            "nested descriptors do not inherit it"), notes(result));
    }

    // ---- booleans: unlimited, shadow_mode, quota_mode, detailed_metric, value_to_metric, share_threshold

    @ParameterizedTest(name = "shadow_mode: {0}")
    @CsvSource({"true, true", "True, true", "yes, true", "on, true", "Y, true", "false, false", "no, false", "OFF, false", "n, false",
        "~, false"})
    void booleansAreReadAsYaml11HasThem(final String yaml, final boolean shadow)
    {
        assertEquals(shadow ? Mode.SHADOW : Mode.MODE_UNSPECIFIED, only("domain: d\ndescriptors: [ { key: k, shadow_mode: " + yaml +
            ", rate_limit: { unit: second, requests_per_unit: 1 } } ]\n").getMode());
    }

    @ParameterizedTest(name = "{0}: maybe")
    @ValueSource(strings = {"shadow_mode", "quota_mode", "detailed_metric", "value_to_metric", "share_threshold"})
    void aBooleanThatIsNoneIsAnErrorNamingTheField(final String field)
    {
        assertTrue(errors("domain: d\ndescriptors: [ { key: k, " + field + ": maybe, rate_limit: { unit: second, requests_per_unit: 1 } } ]\n")
            .contains("descriptors[0]." + field + ": expected true or false, found the text 'maybe'"));
        assertTrue(errors("domain: d\ndescriptors: [ { key: k, rate_limit: { unlimited: 1 } } ]\n")
            .contains("descriptors[0].rate_limit.unlimited: expected true or false, found the text '1'"));
    }

    // ---- quota_mode

    @Test
    void quotaModeIsAnErrorBesideARateLimitAndANoteWithout()
    {
        assertTrue(errors("domain: d\ndescriptors: [ { key: k, quota_mode: true, rate_limit: { unit: second, requests_per_unit: 1 } } ]\n")
            .contains("descriptors[0].quota_mode: no equivalent (there, an over-limit quota descriptor refuses the request only when " +
                "every quota descriptor of it is over)"));
        assertEquals(1, byId(convert("domain: d\ndescriptors: [ { key: k, quota_mode: false, rate_limit: { unit: second, " +
            "requests_per_unit: 1 } } ]\n")).size());
        final EnvoyConfigImport.Result without = convert("domain: d\ndescriptors: [ { key: k, quota_mode: true, descriptors: [ { key: j, " +
            "rate_limit: { unit: second, requests_per_unit: 1 } } ] } ]\n");
        assertEquals(Mode.MODE_UNSPECIFIED, byId(without).get("d.k.j").getMode());
        assertTrue(notes(without).contains("descriptors[0].quota_mode: does nothing without a rate_limit"), notes(without));
    }

    // ---- detailed_metric, value_to_metric, metadata: about envoyproxy/ratelimit's metrics and responses

    @Test
    void detailedMetricIsIgnoredWithANote()
    {
        final EnvoyConfigImport.Result result = convert("domain: d\ndescriptors: [ { key: k, detailed_metric: true, rate_limit: { unit: " +
            "second, requests_per_unit: 1 } } ]\n");
        assertEquals(1, byId(result).size());
        assertTrue(notes(result).contains("descriptors[0].detailed_metric: ignored (every policy's decisions are counted per policy"),
            notes(result));
    }

    @Test
    void valueToMetricIsIgnoredWithANote()
    {
        final EnvoyConfigImport.Result result = convert("domain: d\ndescriptors: [ { key: k, value_to_metric: true, rate_limit: { unit: " +
            "second, requests_per_unit: 1 } } ]\n");
        assertEquals(1, byId(result).size());
        assertTrue(notes(result).contains("descriptors[0].value_to_metric: ignored (it names envoyproxy/ratelimit's metrics"), notes(result));
    }

    @Test
    void metadataIsIgnoredWithANote()
    {
        final EnvoyConfigImport.Result result = convert("""
            domain: d
            descriptors:
              - key: k
                metadata: { team: edge, tier: [1, 2], nested: { any: thing, yes: no } }
                rate_limit: { unit: second, requests_per_unit: 1 }
            """);
        assertEquals(1, byId(result).size());
        assertTrue(notes(result).contains("descriptors[0].metadata: ignored (envoyproxy/ratelimit returns it in the response's " +
            "dynamic_metadata when RESPONSE_DYNAMIC_METADATA is on; the gateway does not)"), notes(result));
    }

    // ---- share_threshold

    @Test
    void shareThresholdIsAnErrorForItNeedsAWildcard()
    {
        assertTrue(errors("domain: d\ndescriptors: [ { key: k, value: v, share_threshold: true, rate_limit: { unit: second, " +
            "requests_per_unit: 1 } } ]\n").contains("descriptors[0].share_threshold: only with a wildcard value (containing '*'), and " +
            "there is none here; envoyproxy/ratelimit refuses it too"));
        assertTrue(errors("domain: d\ndescriptors: [ { key: k, value: 'files/*', share_threshold: true, rate_limit: { unit: second, " +
            "requests_per_unit: 1 } } ]\n").contains("descriptors[0].value: 'files/*' contains '*'"));
        assertEquals(1, byId(convert("domain: d\ndescriptors: [ { key: k, share_threshold: false, rate_limit: { unit: second, " +
            "requests_per_unit: 1 } } ]\n")).size());
    }

    // ---- unknown fields, duplicate keys

    @Test
    void unknownFieldsAndDuplicateKeysAreErrors()
    {
        final String all = errors("""
            domain: d
            extra: 1
            descriptors:
              - { key: k, unit: second, rate_limit: { unit: second, requests_per_unit: 1, shadow_mode: true } }
            """);
        assertTrue(all.contains("extra: unknown field (envoyproxy/ratelimit's: the top level's are domain, descriptors)"), all);
        assertTrue(all.contains("descriptors[0].unit: unknown field (envoyproxy/ratelimit's: a descriptor's are key, value, rate_limit"), all);
        assertTrue(all.contains("descriptors[0].rate_limit.shadow_mode: unknown field (envoyproxy/ratelimit's: a rate_limit's are unit, " +
            "requests_per_unit, unlimited, name, replaces)"), all);
        assertTrue(errors("domain: d\ndescriptors: [ { key: k, key: j } ]\n").startsWith("not YAML: "));
        // An alias and a merge key work as in yaml.v2.
        final Map<String, Policy> merged = byId(convert("""
            domain: d
            descriptors:
              - { key: a, rate_limit: &limit { unit: minute, requests_per_unit: 9 } }
              - { key: b, rate_limit: { <<: *limit, name: n } }
            """));
        assertEquals(9, merged.get("n").getRate());
    }
}
