package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class EnvoyDescriptorsTest
{
    private static final String SET = "{\"policies\":[" +
        envoy("per-ip", "edge", "[{\"key\":\"remote_address\"}]") + "," +
        envoy("login", "edge", "[{\"key\":\"path\",\"value\":\"/login\"}]") + "," +
        envoy("any-path", "edge", "[{\"key\":\"path\"}]") + "," +
        envoy("acme-x", "edge", "[{\"key\":\"tenant\",\"value\":\"acme\"},{\"key\":\"user\"},{\"key\":\"op\"}]") + "," +
        envoy("x-bob-read", "edge", "[{\"key\":\"tenant\"},{\"key\":\"user\",\"value\":\"bob\"},{\"key\":\"op\",\"value\":\"read\"}]") + "," +
        "{\"id\":\"acme\",\"selector\":{\"tenant\":\"e:10.0.0.1\"},\"rate\":5,\"owner\":\"o\"}" +
        "],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":3,\"owner\":\"o\"}}";

    private static String envoy(final String id, final String domain, final String entries)
    {
        return "{\"id\":\"" + id + "\",\"selector\":{\"envoy\":{\"domain\":\"" + domain + "\",\"entries\":" + entries + "}},\"rate\":5,\"owner\":\"o\"}";
    }

    /** The policy the node would pick for this Envoy descriptor (and whether it is "no limit"), from the wire encoding. */
    private static String envoyMatch(final PolicySetIndex index, final String domain, final String... keyValues)
    {
        final List<String> keys = new ArrayList<>();
        final List<String> values = new ArrayList<>();
        for (int i = 0; i + 1 < keyValues.length; i += 2)
        {
            keys.add(keyValues[i]);
            values.add(keyValues[i + 1]);
        }
        return decide(index, AcquireCodec.encodeEnvoyFields(EnvoyDescriptors.bucketKeyOfText(values), EnvoyDescriptors.route(domain, keys, values)));
    }

    /** The policy the node would pick for an SDK's request (never an Envoy descriptor, whatever its fields say). */
    private static String wireMatch(final PolicySetIndex index, final String tenant, final String method, final String route)
    {
        return decide(index, AcquireCodec.encodeFields(tenant, "", method, route, "", ""));
    }

    private static String decide(final PolicySetIndex index, final byte[] fields)
    {
        final ByteBuf buf = Unpooled.buffer();
        try
        {
            final int start = AcquireCodec.beginBatch(buf, MessageType.ACQUIRE, 1);
            AcquireCodec.appendEntry(buf, 1, fields);
            AcquireCodec.finishBatch(buf, start, 1);
            final AcquireDecoder decoder = new AcquireDecoder();
            decoder.wrap(buf, Frame.HEADER_LENGTH, buf.writerIndex(), true);
            assertTrue(decoder.next(), decoder.errorMessage());
            assertEquals(AcquireCodec.isEnvoy(fields), decoder.envoy());
            final CompiledPolicy matched = index.match(decoder);
            return index.noLimit(matched, matched.forRequest(decoder), decoder) ? "no limit" : matched.id();
        }
        finally
        {
            buf.release();
        }
    }

    @Test
    void aDescriptorMatchesTheSelectorWithItsDomainAndKeysAndAnExactValueWinsAtTheFirstEntryWhereTheyDiffer()
    {
        final PolicySetIndex index = PolicySetIndex.fromJson(SET);
        assertEquals("per-ip", envoyMatch(index, "edge", "remote_address", "10.0.0.1"));
        assertEquals("login", envoyMatch(index, "edge", "path", "/login"));
        assertEquals("any-path", envoyMatch(index, "edge", "path", "/login/"));
        assertEquals("any-path", envoyMatch(index, "edge", "path", ""));
        // Both fit; acme-x has its exact value first, x-bob-read has two exact values later: the first entry decides.
        assertEquals("acme-x", envoyMatch(index, "edge", "tenant", "acme", "user", "bob", "op", "read"));
        assertEquals("x-bob-read", envoyMatch(index, "edge", "tenant", "globex", "user", "bob", "op", "read"));
    }

    @Test
    void aDescriptorNoEnvoySelectorFitsHasNoLimitAndOrdinaryPoliciesNeverSelectIt()
    {
        final PolicySetIndex index = PolicySetIndex.fromJson(SET);
        assertEquals("no limit", envoyMatch(index, "other", "remote_address", "10.0.0.1"), "another domain");
        assertEquals("no limit", envoyMatch(index, "edge", "remote_address", "10.0.0.1", "path", "/"), "more entries");
        assertEquals("no limit", envoyMatch(index, "edge", "tenant", "globex", "user", "alice", "op", "read"));
        // The tenant-only policy 'acme' selects that tenant text, but not in an Envoy request...
        assertEquals("no limit", envoyMatch(index, "edge", "remote_address", "10.0.0.1", "x", "y"));
        // ...and an SDK request with that tenant still gets it.
        assertEquals("acme", wireMatch(index, "e:10.0.0.1", "GET", "/envoy/_edge/_remote_address/_10.0.0.1"));
        assertEquals("baseline", wireMatch(index, "globex", "GET", "/envoy/_edge/_remote_address/_10.0.0.1"));
    }

    @Test
    void noFieldValueMakesARequestAnEnvoyDescriptorSoItNeverSkipsTheDefaultOrReachesAnEnvoyPolicy()
    {
        final PolicySetIndex index = PolicySetIndex.fromJson(SET);
        // Once the method ENVOY (in any case) was Envoy's namespace: an SDK or servlet caller that chose it
        // was answered NO_LIMIT, or charged an Envoy policy's buckets. Now it is a method like any other.
        for (final String method : new String[] {"ENVOY", "eNvOy", "envoy"})
        {
            assertEquals("baseline", wireMatch(index, "globex", method, "/envoy/_other"), method);
            assertEquals("baseline", wireMatch(index, "e:10.0.0.2", method, "/envoy/_edge/_remote_address/_10.0.0.2"), method);
            assertEquals("acme", wireMatch(index, "e:10.0.0.1", method, "/envoy/_edge/_remote_address/_10.0.0.1"), method);
        }
        // A policy may select the method ENVOY like any other method: it is no longer reserved.
        final PolicySetIndex selecting = PolicySetIndex.fromJson("{\"policies\":[{\"id\":\"m\",\"selector\":{\"method\":\"envoy\"}," +
            "\"rate\":1,\"owner\":\"o\"}],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":3,\"owner\":\"o\"}}");
        assertEquals("m", wireMatch(selecting, "t", "Envoy", "/x"));
        assertEquals("no limit", envoyMatch(selecting, "edge", "k", "v"), "an Envoy descriptor has no method to match");
    }

    @Test
    void anUnlimitedPolicyAnswersItsDescriptorsWithNoLimitAndOnlyThose()
    {
        final PolicySetIndex index = PolicySetIndex.fromJson("{\"policies\":[" +
            "{\"id\":\"admins\",\"unlimited\":true,\"selector\":{\"envoy\":{\"domain\":\"edge\",\"entries\":[{\"key\":\"user\",\"value\":\"admin\"}]}},\"owner\":\"o\"}," +
            envoy("users", "edge", "[{\"key\":\"user\"}]") +
            "],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":3,\"owner\":\"o\"}}");
        assertEquals("no limit", envoyMatch(index, "edge", "user", "admin"));
        assertEquals("users", envoyMatch(index, "edge", "user", "bob"));
    }

    @Test
    void anyTextBecomesOneSafeSegmentAndLongTextADigest()
    {
        final Set<String> segments = new HashSet<>();
        for (final String text : new String[] {"", ".", "..", "a/b", "a%2Fb", "{id}", "a b", "é", "_", "~x", "x".repeat(40), "x".repeat(41)})
        {
            final String segment = EnvoyDescriptors.segment(text);
            assertTrue(segments.add(segment), "distinct: " + text);
            assertTrue(segment.length() <= 41, segment);
            assertFalse(segment.contains("/") || segment.contains("{") || segment.equals(".") || segment.equals(".."), segment);
            assertTrue(segment.chars().allMatch(c -> c > 0x20 && c < 0x7F), segment);
        }
        assertEquals("_a%2Fb", EnvoyDescriptors.segment("a/b"));
        assertTrue(EnvoyDescriptors.segment("x".repeat(41)).startsWith("~"));
        // Five entries of long keys and values still make a valid route.
        final List<String> keys = List.of("k".repeat(128), "k2", "k3", "k4", "k5");
        final List<String> values = List.of("v".repeat(1000), "é".repeat(300), "v3", "v4", "v5");
        final String route = EnvoyDescriptors.route("d".repeat(128), keys, values);
        final ByteBuf buf = Unpooled.wrappedBuffer(route.getBytes(StandardCharsets.UTF_8));
        assertEquals(FieldProblem.NONE, DescriptorRules.check(DescriptorField.ROUTE, buf, 0, buf.readableBytes()), route);
    }

    @Test
    void theBucketKeyTellsEveryCombinationOfValuesApartAndFitsATenant()
    {
        final Set<String> keys = new HashSet<>();
        for (final List<String> values : List.of(List.of("a|b"), List.of("a", "b"), List.of("a%7Cb"), List.of(""), List.of("", ""),
            List.of(" a"), List.of("a"), List.of("x".repeat(62)), List.of("x".repeat(63)), List.of("é"), List.of("\u0085"), List.of("%C2%85"),
            List.of("a\u0000b"), List.of("\u2028"), List.of("\uD83D\uDE00")))
        {
            assertValidDistinctKey(keys, EnvoyDescriptors.bucketKeyOfText(values), values);
        }
        assertEquals("e:10.0.0.1|GET", EnvoyDescriptors.bucketKeyOfText(List.of("10.0.0.1", "GET")));
        assertEquals("e:é", EnvoyDescriptors.bucketKeyOfText(List.of("é")));
        assertEquals("e:%C2%85", EnvoyDescriptors.bucketKeyOfText(List.of("\u0085")), "a C1 control character is escaped byte by byte");
        assertEquals("e:%25C2%2585", EnvoyDescriptors.bucketKeyOfText(List.of("%C2%85")), "and its escape, written out, is another key");
    }

    @Test
    void anyBytesAHeaderCanCarryMakeAValidDistinctBucketKeyAndRoute()
    {
        // A header value may hold any byte but a few; Envoy copies it as it is, valid UTF-8 or not.
        final Set<String> keys = new HashSet<>();
        final List<byte[]> samples = new ArrayList<>();
        for (int b = 0; b < 256; b++)
        {
            samples.add(new byte[] {(byte)b});
            samples.add(new byte[] {'a', (byte)b, 'z'});
        }
        samples.add(new byte[] {(byte)0xC0, (byte)0x80});               // overlong NUL
        samples.add(new byte[] {(byte)0xED, (byte)0xA0, (byte)0x80});   // a surrogate
        samples.add(new byte[] {(byte)0xF4, (byte)0x90, (byte)0x80, (byte)0x80}); // above U+10FFFF
        samples.add(new byte[] {(byte)0xE2, (byte)0x82});               // cut in the middle
        samples.add("%80".getBytes(StandardCharsets.UTF_8));
        samples.add("é".getBytes(StandardCharsets.UTF_8));
        for (final byte[] value : samples)
        {
            assertValidDistinctKey(keys, EnvoyDescriptors.bucketKey(List.of(value)), HexFormat.of().formatHex(value));
            final String route = EnvoyDescriptors.route("edge".getBytes(StandardCharsets.UTF_8), List.of("k".getBytes(StandardCharsets.UTF_8)),
                List.of(value));
            final ByteBuf buf = Unpooled.wrappedBuffer(route.getBytes(StandardCharsets.UTF_8));
            assertEquals(FieldProblem.NONE, DescriptorRules.check(DescriptorField.ROUTE, buf, 0, buf.readableBytes()), route);
        }
        assertEquals("e:%80", EnvoyDescriptors.bucketKey(List.of(new byte[] {(byte)0x80})));
        assertEquals("e:%2580", EnvoyDescriptors.bucketKey(List.of("%80".getBytes(StandardCharsets.UTF_8))));
    }

    private static void assertValidDistinctKey(final Set<String> keys, final String key, final Object source)
    {
        assertTrue(keys.add(key), "distinct: " + source + " -> " + key);
        final ByteBuf buf = Unpooled.wrappedBuffer(key.getBytes(StandardCharsets.UTF_8));
        assertEquals(FieldProblem.NONE, DescriptorRules.check(DescriptorField.TENANT, buf, 0, buf.readableBytes()), key);
        assertEquals(key, DescriptorRules.trim(key), "no surrounding spaces to trim: " + key);
    }

    @Test
    void anEnvoySelectorIsRefusedWhereItCannotHoldAndSaysWhy()
    {
        final String all = String.join("\n", assertThrows(PolicyValidationException.class, () -> PolicySetIndex.fromJson("{\"policies\":[" +
            "{\"id\":\"mixed\",\"selector\":{\"tenant\":\"acme\",\"envoy\":{\"domain\":\"d\",\"entries\":[{\"key\":\"k\"}]}},\"rate\":1,\"owner\":\"o\"}," +
            "{\"id\":\"empty\",\"selector\":{\"envoy\":{\"entries\":[]}},\"rate\":1,\"owner\":\"o\"}," +
            "{\"id\":\"six\",\"selector\":{\"envoy\":{\"domain\":\"d\",\"entries\":[{\"key\":\"a\"},{\"key\":\"b\"},{\"key\":\"c\"},{\"key\":\"d\"},{\"key\":\"e\"},{\"key\":\"f\"}]}},\"rate\":1,\"owner\":\"o\"}," +
            "{\"id\":\"nokey\",\"selector\":{\"envoy\":{\"domain\":\"d\",\"entries\":[{\"value\":\"v\"}]}},\"rate\":1,\"owner\":\"o\"}," +
            "{\"id\":\"per-user\",\"scope\":\"PRINCIPAL\",\"selector\":{\"envoy\":{\"domain\":\"d\",\"entries\":[{\"key\":\"u\"}]}},\"rate\":1,\"owner\":\"o\"}," +
            "{\"id\":\"stacked\",\"stacked\":true,\"selector\":{\"envoy\":{\"domain\":\"d\",\"entries\":[{\"key\":\"s\"}]}},\"rate\":1,\"owner\":\"o\"}," +
            "{\"id\":\"waits\",\"excess\":\"WAIT\",\"maxWait\":\"1s\",\"selector\":{\"envoy\":{\"domain\":\"d\",\"entries\":[{\"key\":\"w\"}]}},\"rate\":1,\"owner\":\"o\"}," +
            "{\"id\":\"leases\",\"maxConcurrent\":3,\"selector\":{\"envoy\":{\"domain\":\"d\",\"entries\":[{\"key\":\"l\"}]}},\"owner\":\"o\"}," +
            "{\"id\":\"twin-a\",\"selector\":{\"envoy\":{\"domain\":\"d\",\"entries\":[{\"key\":\"t\"}]}},\"rate\":1,\"owner\":\"o\"}," +
            "{\"id\":\"twin-b\",\"selector\":{\"envoy\":{\"domain\":\"d\",\"entries\":[{\"key\":\"t\"}]}},\"rate\":2,\"owner\":\"o\"}" +
            "]}")).errors());
        assertTrue(all.contains("(mixed).selector: envoy selects Envoy's descriptors alone"), all);
        assertTrue(all.contains("(empty).selector.envoy.domain: required"), all);
        assertTrue(all.contains("(empty).selector.envoy.entries: 1 to 5 entries"), all);
        assertTrue(all.contains("(six).selector.envoy.entries: 1 to 5 entries"), all);
        assertTrue(all.contains("(nokey).selector.envoy.entries[0].key: required"), all);
        assertTrue(all.contains("(per-user).scope: an envoy selector's buckets are per distinct descriptor values"), all);
        assertTrue(all.contains("(stacked).stacked: Envoy sends each limit as a descriptor of its own"), all);
        assertTrue(all.contains("(waits).excess: Envoy cannot hold a request"), all);
        assertTrue(all.contains("(leases).maxConcurrent: Envoy's rate limit service has no release"), all);
        assertTrue(all.contains("(twin-b).selector: conflicts with policy 'twin-a'"), all);
    }

    @Test
    void unlimitedAndReplacesBelongToEnvoySelectorsAndAnUnlimitedPolicyHasNoLimitFields()
    {
        final PolicySetIndex index = PolicySetIndex.fromJson("{\"policies\":[" +
            "{\"id\":\"free\",\"unlimited\":true,\"selector\":{\"envoy\":{\"domain\":\"d\",\"entries\":[{\"key\":\"k\",\"value\":\"admin\"}]}},\"owner\":\"o\"}," +
            "{\"id\":\"specific\",\"replaces\":[\"general\"],\"selector\":{\"envoy\":{\"domain\":\"d\",\"entries\":[{\"key\":\"s\"}]}},\"rate\":1,\"owner\":\"o\"}" +
            "]}");
        assertTrue(index.policies().stream().anyMatch(p -> p.id().equals("free") && p.unlimited()));
        final String all = String.join("\n", assertThrows(PolicyValidationException.class, () -> PolicySetIndex.fromJson("{\"policies\":[" +
            "{\"id\":\"not-envoy\",\"unlimited\":true,\"selector\":{\"tenant\":\"acme\"},\"owner\":\"o\"}," +
            "{\"id\":\"with-rate\",\"unlimited\":true,\"rate\":5,\"selector\":{\"envoy\":{\"domain\":\"d\",\"entries\":[{\"key\":\"a\"}]}},\"owner\":\"o\"}," +
            "{\"id\":\"shadowed\",\"unlimited\":true,\"mode\":\"SHADOW\",\"selector\":{\"envoy\":{\"domain\":\"d\",\"entries\":[{\"key\":\"b\"}]}},\"owner\":\"o\"}," +
            "{\"id\":\"replaces-route\",\"replaces\":[\"x\"],\"selector\":{\"route\":\"/x\"},\"rate\":1,\"owner\":\"o\"}," +
            "{\"id\":\"self\",\"replaces\":[\"self\",\"Not An Id\"],\"selector\":{\"envoy\":{\"domain\":\"d\",\"entries\":[{\"key\":\"c\"}]}},\"rate\":1,\"owner\":\"o\"}" +
            "]}")).errors());
        assertTrue(all.contains("(not-envoy).unlimited: only for envoy selectors"), all);
        assertTrue(all.contains("(with-rate).unlimited: an unlimited policy has no limit"), all);
        assertTrue(all.contains("(shadowed).unlimited: an unlimited policy never refuses"), all);
        assertTrue(all.contains("(replaces-route).replaces: only for envoy selectors"), all);
        assertTrue(all.contains("(self).replaces[0]: a policy cannot replace itself"), all);
        assertTrue(all.contains("(self).replaces[1]: 'Not An Id' is not a policy id"), all);
    }
}
