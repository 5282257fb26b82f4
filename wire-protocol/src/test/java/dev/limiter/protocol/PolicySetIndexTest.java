package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PolicySetIndexTest
{
    private static final String SET = "{\"policies\":[" +
        "{\"id\":\"orders\",\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":100,\"owner\":\"o\"}," +
        "{\"id\":\"orders-post\",\"selector\":{\"route\":\"/v1/orders/{id}\",\"method\":\"post\"},\"rate\":10,\"owner\":\"o\"}," +
        "{\"id\":\"orders-literal\",\"selector\":{\"route\":\"/v1/orders/export\"},\"rate\":1,\"owner\":\"o\"}," +
        "{\"id\":\"acme\",\"selector\":{\"tenant\":\"acme\"},\"rate\":1000,\"owner\":\"o\"}," +
        "{\"id\":\"low\",\"selector\":{\"region\":\"EU\"},\"rate\":5,\"owner\":\"o\",\"priority\":1}," +
        "{\"id\":\"high\",\"selector\":{\"clientIp\":\"::1\"},\"rate\":5,\"owner\":\"o\",\"priority\":1}" +
        "],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":3,\"burst\":6,\"owner\":\"o\"}}";

    private static String onDecoder(final String tenant, final String route, final java.util.function.Function<AcquireDecoder, String> use)
    {
        final ByteBuf buf = Unpooled.buffer();
        try
        {
            final int start = AcquireCodec.beginBatch(buf, MessageType.ACQUIRE, 1);
            AcquireCodec.appendEntry(buf, 1, AcquireCodec.encodeFields(tenant, "", "GET", route, "", ""));
            AcquireCodec.finishBatch(buf, start, 1);
            final AcquireDecoder decoder = new AcquireDecoder();
            decoder.wrap(buf, Frame.HEADER_LENGTH, buf.writerIndex(), true);
            assertTrue(decoder.next(), decoder.errorMessage());
            return use.apply(decoder);
        }
        finally
        {
            buf.release();
        }
    }

    /** Runs the matcher on a descriptor encoded exactly as the wire carries it. */
    private static String match(final PolicySetIndex index, final String tenant, final String method, final String route,
        final String ip, final String region)
    {
        final ByteBuf buf = Unpooled.buffer();
        try
        {
            final int start = AcquireCodec.beginBatch(buf, MessageType.ACQUIRE, 1);
            AcquireCodec.appendEntry(buf, 1, AcquireCodec.encodeFields(tenant, "", method, route, ip, region));
            AcquireCodec.finishBatch(buf, start, 1);
            final AcquireDecoder decoder = new AcquireDecoder();
            decoder.wrap(buf, Frame.HEADER_LENGTH, buf.writerIndex(), true);
            assertTrue(decoder.next(), decoder.errorMessage());
            return index.match(decoder).id();
        }
        finally
        {
            buf.release();
        }
    }

    @Test
    void shouldPickTheMostSpecificMatchingPolicy()
    {
        final PolicySetIndex index = PolicySetIndex.fromJson(SET);
        assertEquals("orders", match(index, "globex", "GET", "/v1/orders/42", "", ""));
        assertEquals("orders-post", match(index, "globex", "POST", "/v1/orders/42", "", ""));
        assertEquals("orders-post", match(index, "globex", "post", "/v1/orders/42?x=1", "", ""), "method is case-insensitive");
        assertEquals("orders-literal", match(index, "globex", "GET", "/v1/orders/export", "", ""), "literal beats parameter");
        assertEquals("acme", match(index, "acme", "POST", "/v1/orders/42", "", ""), "tenant is the most specific field");
        assertEquals("baseline", match(index, "globex", "GET", "/v2/unknown", "", ""));
        assertEquals("high", match(index, "globex", "GET", "/x", "::1", "eu"), "client IP ranks above region");
    }

    @Test
    void shouldUseTheBuiltInBaselineWhenTheSetHasNoDefault()
    {
        final PolicySetIndex index = PolicySetIndex.fromJson("{\"policies\":[]}");
        assertEquals("default", index.defaultPolicy().id());
        assertEquals(20, index.defaultPolicy().limit().burstTokens());
        assertEquals(1, index.size());
    }

    @Test
    void shouldDefaultBurstToRateAndPeriodToOneSecond()
    {
        final CompiledPolicy p = PolicySetIndex.fromJson(SET).policies().get(0);
        assertEquals(100, p.limit().burstTokens());
        assertEquals(1, p.windowSeconds());
    }

    private static PolicyValidationException reject(final String json)
    {
        return assertThrows(PolicyValidationException.class, () -> PolicySetIndex.fromJson(json));
    }

    @Test
    void aDurationWrittenInHoursSaysHowDurationsAreWritten()
    {
        final String all = String.join("\n", reject("{\"policies\":[{\"id\":\"a\",\"rate\":5,\"period\":\"1h\",\"owner\":\"o\"," +
            "\"selector\":{\"route\":\"/a\"}}]}").errors());
        assertTrue(all.contains("Failed to parse duration: \"1h\" (a duration is seconds with an 's': \"60s\", \"0.5s\", \"7200s\" for 2 hours)"), all);
    }

    @Test
    void aRateOrBurstTooLargeToRefillWithoutOverflowIsRefusedNamingTheRange()
    {
        // Positive, but past what a bucket's arithmetic holds: the message gives the range, not "positive".
        final String all = String.join("\n", reject("{\"policies\":[" +
            "{\"id\":\"a\",\"rate\":5,\"burst\":9223372036854775807,\"owner\":\"o\",\"selector\":{\"route\":\"/a\"}}," +
            "{\"id\":\"b\",\"rate\":4611686018427387904,\"owner\":\"o\",\"selector\":{\"route\":\"/b\"}}," +
            "{\"id\":\"c\",\"rate\":5,\"burst\":18446744073709551615,\"owner\":\"o\",\"selector\":{\"route\":\"/c\"}}]}").errors());
        assertTrue(all.contains("policies[0] (a).burst: must be 1 to 4611686018427387903 tokens (or unset for the rate), was 9223372036854775807"), all);
        assertTrue(all.contains("policies[1] (b).rate: must be 1 to 4611686018427387903 tokens per period, was 4611686018427387904"), all);
        assertTrue(all.contains("policies[2] (c).burst: must be 1 to 4611686018427387903 tokens (or unset for the rate), was 18446744073709551615"), all);
        // The largest of each is taken (with a period that keeps burst x period exact).
        PolicySetIndex.fromJson("{\"policies\":[{\"id\":\"a\",\"rate\":4611686018427387903,\"burst\":4611686018427387903,\"period\":\"0.000000001s\"," +
            "\"owner\":\"o\",\"selector\":{\"route\":\"/a\"}}]}");
    }

    @Test
    void shouldReportEveryFieldLevelProblemAtOnce()
    {
        final PolicyValidationException e = reject("{\"policies\":[" +
            "{\"id\":\"Bad Id\",\"rate\":0,\"owner\":\"\"}," +
            "{\"id\":\"ok\",\"rate\":5,\"period\":\"-1s\",\"owner\":\"o\",\"selector\":{\"route\":\"no-slash\",\"method\":\"G T\"}}]}");
        final String all = String.join("\n", e.errors());
        assertTrue(all.contains("policies[0] (Bad Id).id: 'Bad Id' must match"), all);
        assertTrue(all.contains("policies[0] (Bad Id).rate: must be 1 to 4611686018427387903 tokens per period, was 0"), all);
        assertTrue(all.contains("policies[0] (Bad Id).owner: required"), all);
        assertTrue(all.contains("policies[1] (ok).period"), all);
        assertTrue(all.contains("policies[1] (ok).selector.route"), all);
        assertTrue(all.contains("policies[1] (ok).selector.method contains a character"), all);
    }

    @Test
    void windowPoliciesCompileToTheirAlgorithmAndRefuseABurstOrATooLargeSlidingLimit()
    {
        final PolicySetIndex index = PolicySetIndex.fromJson("{\"policies\":[" +
            "{\"id\":\"daily\",\"rate\":10000,\"period\":\"86400s\",\"algorithm\":\"FIXED_WINDOW\",\"owner\":\"o\",\"selector\":{\"route\":\"/a\"}}," +
            "{\"id\":\"rolling\",\"rate\":100,\"period\":\"60s\",\"burst\":100,\"algorithm\":\"SLIDING_WINDOW\",\"owner\":\"o\",\"selector\":{\"route\":\"/b\"}}]}");
        final CompiledPolicy daily = index.policies().stream().filter(p -> p.id().equals("daily")).findFirst().orElseThrow();
        assertTrue(daily.limit() instanceof FixedWindow && daily.limit().wallClock(), daily.limit().toString());
        assertEquals(10_000, daily.limit().burstTokens());
        assertEquals(86_400, daily.windowSeconds());
        final CompiledPolicy rolling = index.policies().stream().filter(p -> p.id().equals("rolling")).findFirst().orElseThrow();
        assertEquals("SLIDING_WINDOW", rolling.limit().algorithm());
        assertEquals(60, rolling.windowSeconds());

        final CompiledPolicy monthly = PolicySetIndex.fromJson("{\"policies\":[{\"id\":\"monthly\",\"rate\":10000," +
            "\"algorithm\":\"FIXED_WINDOW\",\"calendarWindow\":\"MONTH\",\"owner\":\"o\"}]}").policies().get(0);
        assertTrue(monthly.limit() instanceof CalendarMonthWindow, monthly.limit().toString());
        final String calendar = String.join("\n", reject("{\"policies\":[" +
            "{\"id\":\"a\",\"rate\":10,\"calendarWindow\":\"MONTH\",\"owner\":\"o\",\"selector\":{\"route\":\"/a\"}}," +
            "{\"id\":\"b\",\"rate\":10,\"period\":\"60s\",\"algorithm\":\"FIXED_WINDOW\",\"calendarWindow\":\"MONTH\",\"owner\":\"o\"," +
            "\"selector\":{\"route\":\"/b\"}}]}").errors());
        assertTrue(calendar.contains("policies[0] (a).calendarWindow: only a FIXED_WINDOW counts per calendar month"), calendar);
        assertTrue(calendar.contains("policies[1] (b).period: a calendar-month window has no period of its own"), calendar);

        final String all = String.join("\n", reject("{\"policies\":[" +
            "{\"id\":\"a\",\"rate\":10,\"burst\":20,\"algorithm\":\"FIXED_WINDOW\",\"owner\":\"o\",\"selector\":{\"route\":\"/a\"}}," +
            "{\"id\":\"b\",\"rate\":3000000000,\"algorithm\":\"SLIDING_WINDOW\",\"owner\":\"o\",\"selector\":{\"route\":\"/b\"}}]}").errors());
        assertTrue(all.contains("policies[0] (a).burst: a FIXED_WINDOW grants `rate` per window and has no burst of its own"), all);
        assertTrue(all.contains("policies[1] (b).rate: a SLIDING_WINDOW counts at most 2147483647 per period"), all);
        assertTrue(reject("{\"policies\":[{\"id\":\"a\",\"rate\":1,\"owner\":\"o\",\"algorithm\":\"GCRAX\"}]}").getMessage().contains("GCRAX"));
        assertTrue(String.join("\n", PolicySetIndex.validatePolicy(
            dev.limiter.protocol.policy.Policy.newBuilder().setId("a").setRate(1).setOwner("o").setAlgorithmValue(99).build()))
            .contains("policy.algorithm: unknown algorithm; TOKEN_BUCKET, GCRA, FIXED_WINDOW or SLIDING_WINDOW"));
    }

    @Test
    void aPolicyWithSeveralLimitsCompilesEachAsACompanionAndBadOnesAreNamedField()
    {
        final CompiledPolicy p = PolicySetIndex.fromJson("{\"policies\":[{\"id\":\"api\",\"rate\":10,\"owner\":\"o\"," +
            "\"limits\":[{\"rate\":1000,\"period\":\"3600s\",\"algorithm\":\"FIXED_WINDOW\"},{\"rate\":5000,\"algorithm\":\"FIXED_WINDOW\"," +
            "\"calendarWindow\":\"MONTH\"}]}]}").policies().get(0);
        assertEquals(10, p.limit().burstTokens());
        assertEquals(2, p.companions().length);
        assertEquals(1, p.companions()[0].limitIndex());
        assertEquals(p.ordinal(), p.companions()[0].ordinal());
        assertEquals("api", p.companions()[1].id());
        assertEquals(3600, p.companions()[0].windowSeconds());
        assertTrue(p.companions()[1].limit() instanceof CalendarMonthWindow);
        assertEquals(0, p.companions()[0].companions().length);

        final String all = String.join("\n", reject("{\"policies\":[" +
            "{\"id\":\"a\",\"rate\":10,\"owner\":\"o\",\"selector\":{\"route\":\"/a\"},\"limits\":[{\"rate\":0},{\"rate\":5,\"burst\":9," +
            "\"algorithm\":\"FIXED_WINDOW\"}]}," +
            "{\"id\":\"b\",\"rate\":10,\"owner\":\"o\",\"selector\":{\"route\":\"/b\"},\"limits\":[{\"rate\":1},{\"rate\":1},{\"rate\":1},{\"rate\":1}]}," +
            "{\"id\":\"c\",\"rate\":10,\"owner\":\"o\",\"mode\":\"SHADOW\",\"selector\":{\"route\":\"/c\"},\"limits\":[{\"rate\":1}]}]}").errors());
        assertTrue(all.contains("policies[0] (a).limits[0].rate: must be 1 to 4611686018427387903 tokens per period, was 0"), all);
        assertTrue(all.contains("policies[0] (a).limits[1].burst: a FIXED_WINDOW grants `rate` per window"), all);
        assertTrue(all.contains("policies[1] (b).limits: at most 3 more limits on one policy, was 4"), all);
        assertTrue(all.contains("policies[2] (c).limits: a SHADOW version is evaluated against one limit"), all);
    }

    @Test
    void aConcurrencyPolicyCompilesToLeasesWithItsTtlAndBadFieldsAreNamed()
    {
        final CompiledPolicy exports = PolicySetIndex.fromJson("{\"policies\":[{\"id\":\"exports\",\"maxConcurrent\":4," +
            "\"leaseTtl\":\"30s\",\"owner\":\"o\",\"limits\":[{\"rate\":100}]}]}").policies().get(0);
        assertTrue(exports.limit() instanceof ConcurrencyLimit && exports.limit().leases(), exports.limit().toString());
        assertEquals(4, exports.limit().burstTokens());
        assertEquals(30, exports.windowSeconds());
        assertFalse(exports.companions()[0].limit().leases(), "its extra limit is a rate");
        final CompiledPolicy defaults = PolicySetIndex.fromJson("{\"policies\":[{\"id\":\"d\",\"maxConcurrent\":1,\"owner\":\"o\"}]}")
            .policies().get(0);
        assertEquals(PolicySetIndex.DEFAULT_LEASE_TTL_NANOS, ((ConcurrencyLimit)defaults.limit()).ttlNanos());

        final String all = String.join("\n", reject("{\"policies\":[" +
            "{\"id\":\"a\",\"maxConcurrent\":70000,\"owner\":\"o\",\"selector\":{\"route\":\"/a\"}}," +
            "{\"id\":\"b\",\"maxConcurrent\":5,\"rate\":10,\"owner\":\"o\",\"selector\":{\"route\":\"/b\"}}," +
            "{\"id\":\"c\",\"maxConcurrent\":5,\"leaseTtl\":\"0.5s\",\"owner\":\"o\",\"selector\":{\"route\":\"/c\"}}," +
            "{\"id\":\"d\",\"maxConcurrent\":5,\"excess\":\"WAIT\",\"maxWait\":\"1s\",\"owner\":\"o\",\"selector\":{\"route\":\"/d\"}}," +
            "{\"id\":\"e\",\"rate\":5,\"leaseTtl\":\"10s\",\"owner\":\"o\",\"selector\":{\"route\":\"/e\"}}]}").errors());
        assertTrue(all.contains("policies[0] (a).maxConcurrent: must be 1 to 65535, was 70000"), all);
        assertTrue(all.contains("policies[1] (b).maxConcurrent: a concurrency limit counts leases held, not a rate"), all);
        assertTrue(all.contains("policies[2] (c).leaseTtl: must be 1s to 24h"), all);
        assertTrue(all.contains("policies[3] (d).excess: a concurrency limit only rejects"), all);
        assertTrue(all.contains("policies[4] (e).leaseTtl: only a concurrency limit has leases"), all);
        assertTrue(String.join("\n", PolicySetIndex.validatePolicy(dev.limiter.protocol.policy.Policy.newBuilder().setId("a").setRate(1)
            .setOwner("o").setVersion(1L << 28).build())).contains("policy.version: at most 268435455 versions of one policy"),
            "a version beyond what a bucket key carries");
    }

    @Test
    void shouldRejectUnknownFieldsConflictsAndDuplicates()
    {
        assertTrue(reject("{\"policies\":[{\"id\":\"a\",\"rate\":1,\"owner\":\"o\",\"selector\":{\"tenantt\":\"x\"}}]}")
            .getMessage().contains("tenantt"));
        assertTrue(reject("{\"policies\":[" +
            "{\"id\":\"a\",\"rate\":1,\"owner\":\"o\",\"selector\":{\"route\":\"/x/{id}\"}}," +
            "{\"id\":\"b\",\"rate\":2,\"owner\":\"o\",\"selector\":{\"route\":\"/x//{other}/\"}}]}")
            .getMessage().contains("conflicts with policy 'a'"));
        assertTrue(reject("{\"policies\":[{\"id\":\"a\",\"rate\":1,\"owner\":\"o\"},{\"id\":\"a\",\"rate\":1,\"owner\":\"o\",\"selector\":{\"tenant\":\"t\"}}]}")
            .getMessage().contains("duplicate id 'a'"));
        assertTrue(reject("{\"policies\":[{\"id\":\"a\",\"rate\":-3,\"owner\":\"o\"}]}").getMessage().contains("invalid"));
        assertTrue(reject("not json").getMessage().contains("policy JSON is invalid"));
        assertTrue(reject("{\"defaultPolicy\":{\"id\":\"d\",\"rate\":1,\"owner\":\"o\",\"selector\":{\"tenant\":\"x\"}}}")
            .getMessage().contains("defaultPolicy.selector: must be empty"));
        assertTrue(reject("{\"defaultPolicy\":{\"id\":\"d\",\"rate\":1,\"owner\":\"o\",\"mode\":\"SHADOW\"}}")
            .getMessage().contains("defaultPolicy.mode: must be ENFORCE"));
    }

    @Test
    void shadowPoliciesAreMatchedApartAndNeverDecide()
    {
        final PolicySetIndex index = PolicySetIndex.fromJson("{\"policies\":[" +
            "{\"id\":\"orders\",\"rate\":10,\"owner\":\"o\",\"selector\":{\"route\":\"/v1/orders/{id}\"}}," +
            "{\"id\":\"orders-tight\",\"rate\":2,\"owner\":\"o\",\"mode\":\"SHADOW\",\"selector\":{\"route\":\"/v1/orders/{id}\"}}]}");
        assertTrue(index.hasShadow());
        assertEquals("orders", match(index, "acme", "GET", "/v1/orders/7", "", ""), "a shadow with the same selector does not conflict, nor decide");
        assertEquals("orders-tight", onDecoder("acme", "/v1/orders/7", d -> index.matchShadow(d).id()));
        assertEquals("none", onDecoder("acme", "/v1/users/7", d -> index.matchShadow(d) == null ? "none" : "some"));
        assertFalse(PolicySetIndex.fromJson("{\"policies\":[]}").hasShadow());
    }

    @Test
    void shouldLoadTheSamplePolicyFileShippedWithTheRepository() throws Exception
    {
        final PolicySetIndex index = PolicySetIndex.fromJson(Files.readString(Path.of("../config/policies.json")));
        assertEquals("default", index.defaultPolicy().id());
        assertEquals("orders-read", match(index, "globex", "GET", "/v1/orders/7", "", ""));
        assertEquals("login-per-ip", match(index, "globex", "POST", "/v1/login", "10.0.0.1", ""));
        assertEquals(index.policies().size(), PolicySetIndex.fromJson(
            PolicySetIndex.toJson(index.policies().get(0).source() == null ? null :
                dev.limiter.protocol.policy.PolicySet.newBuilder()
                    .addAllPolicies(index.policies().subList(0, index.size() - 1).stream().map(CompiledPolicy::source).toList())
                    .setDefaultPolicy(index.defaultPolicy().source()).build())).size(), "JSON round trip");
    }
}
