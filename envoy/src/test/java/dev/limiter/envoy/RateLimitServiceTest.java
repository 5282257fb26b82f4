package dev.limiter.envoy;

import com.google.protobuf.UInt64Value;
import dev.limiter.client.LimiterClient;
import dev.limiter.server.ServerConfig;
import dev.limiter.server.StoreServer;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import com.google.protobuf.ByteString;
import dev.limiter.envoy.raw.RawEntry;
import dev.limiter.envoy.raw.RawRateLimitDescriptor;
import dev.limiter.envoy.raw.RawRateLimitRequest;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ClientCalls;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Envoy's rate limit service against one real node, called with a gRPC client built from Envoy's own stubs. */
@Timeout(60)
class RateLimitServiceTest
{
    static final String POLICIES = "{\"version\":1,\"policies\":[" +
        policy("per-ip", "edge", "[{\"key\":\"remote_address\"}]", "\"rate\":1,\"period\":\"3600s\",\"burst\":3") + "," +
        policy("login", "edge", "[{\"key\":\"path\",\"value\":\"/login\"}]", "\"rate\":2,\"period\":\"60s\"") + "," +
        policy("any-path", "edge", "[{\"key\":\"path\"}]", "\"rate\":100,\"period\":\"10s\"") + "," +
        policy("acme-users", "edge", "[{\"key\":\"tenant\",\"value\":\"acme\"},{\"key\":\"user\"}]", "\"rate\":1,\"period\":\"3600s\",\"burst\":1") + "," +
        policy("bob-anywhere", "edge", "[{\"key\":\"tenant\"},{\"key\":\"user\",\"value\":\"bob\"}]", "\"rate\":5,\"period\":\"3600s\"") + "," +
        policy("one-key", "edge", "[{\"key\":\"api_key\"}]", "\"rate\":1,\"period\":\"3600s\",\"burst\":2,\"scope\":\"GLOBAL\"") + "," +
        policy("shadow-ip", "shadowed", "[{\"key\":\"ip\"}]", "\"rate\":1,\"period\":\"3600s\",\"burst\":1,\"mode\":\"SHADOW\"") + "," +
        policy("closed", "payments", "[{\"key\":\"account\"}]", "\"rate\":1000,\"failureMode\":\"CLOSED\"") + "," +
        policy("admins", "edge", "[{\"key\":\"user\",\"value\":\"admin\"}]", "\"unlimited\":true") + "," +
        policy("users", "edge", "[{\"key\":\"user\"}]", "\"rate\":1,\"period\":\"3600s\",\"burst\":5") + "," +
        policy("vip", "edge", "[{\"key\":\"plan\",\"value\":\"vip\"}]", "\"rate\":1,\"period\":\"3600s\",\"burst\":9,\"replaces\":[\"users\"]") +
        "],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":1,\"period\":\"3600s\",\"burst\":1,\"owner\":\"t\"}}";

    @TempDir
    Path dir;

    private StoreServer node;
    private RlsServer rls;
    private ManagedChannel channel;

    static String policy(final String id, final String domain, final String entries, final String limit)
    {
        return "{\"id\":\"" + id + "\",\"selector\":{\"envoy\":{\"domain\":\"" + domain + "\",\"entries\":" + entries + "}}," +
            limit + ",\"owner\":\"t\"}";
    }

    @BeforeEach
    void start() throws Exception
    {
        final Path policies = dir.resolve("policies.json");
        Files.writeString(policies, POLICIES);
        node = new StoreServer(new ServerConfig().host("127.0.0.1").port(0).adminPort(-1).shards(2).ioThreads(1)
            .policiesFile(policies).dataDir(dir.resolve("node"))).start();
        startGateway(false);
    }

    private void startGateway(final boolean headers)
    {
        rls = RlsServer.start(LimiterClient.builder().endpoints("127.0.0.1:" + node.port()).deadline(Duration.ofMillis(200)), 1,
            new InetSocketAddress("127.0.0.1", 0), Duration.ofMillis(200), headers);
        channel = NettyChannelBuilder.forAddress("127.0.0.1", rls.port()).usePlaintext().build();
    }

    @AfterEach
    void stop() throws InterruptedException
    {
        stopGateway();
        if (node != null)
        {
            node.close();
        }
    }

    private void stopGateway() throws InterruptedException
    {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        rls.close(); // and its client
    }

    /** As Envoy calls it: a blocking call with a deadline. */
    private RateLimitResponse call(final RateLimitRequest request)
    {
        return RateLimitServiceGrpc.newBlockingStub(channel).withDeadlineAfter(2, TimeUnit.SECONDS).shouldRateLimit(request);
    }

    static RateLimitDescriptor descriptor(final String... keyValues)
    {
        final RateLimitDescriptor.Builder d = RateLimitDescriptor.newBuilder();
        for (int i = 0; i + 1 < keyValues.length; i += 2)
        {
            d.addEntries(RateLimitDescriptor.Entry.newBuilder().setKey(keyValues[i]).setValue(keyValues[i + 1]));
        }
        return d.build();
    }

    static RateLimitRequest request(final String domain, final RateLimitDescriptor... descriptors)
    {
        final RateLimitRequest.Builder r = RateLimitRequest.newBuilder().setDomain(domain);
        for (final RateLimitDescriptor d : descriptors)
        {
            r.addDescriptors(d);
        }
        return r.build();
    }

    private DescriptorStatus one(final String domain, final String... keyValues)
    {
        final RateLimitResponse response = call(request(domain, descriptor(keyValues)));
        assertEquals(1, response.getStatusesCount());
        assertEquals(response.getOverallCode(), response.getStatuses(0).getCode());
        assertFalse(response.hasDynamicMetadata(), "decided by the node, not locally: " + response);
        return response.getStatuses(0);
    }

    @Test
    void eachDistinctValueHasItsOwnBucketAndEachStatusCarriesTheLimitAndWhatIsLeft()
    {
        for (int left = 2; left >= 0; left--)
        {
            final DescriptorStatus status = one("edge", "remote_address", "10.0.0.1");
            assertEquals(Code.OK, status.getCode());
            assertEquals(left, status.getLimitRemaining());
            assertEquals(RateLimit.newBuilder().setName("per-ip").setRequestsPerUnit(1).setUnit(RateLimit.Unit.HOUR).build(),
                status.getCurrentLimit());
            assertTrue(status.getDurationUntilReset().getSeconds() > 0, status.toString());
        }
        assertEquals(Code.OVER_LIMIT, one("edge", "remote_address", "10.0.0.1").getCode());
        assertEquals(Code.OK, one("edge", "remote_address", "10.0.0.2").getCode(), "another address, another bucket");
        // A value that is not a path segment (slashes, spaces, '%', non-ASCII) is a key like any other.
        assertEquals(2, one("edge", "remote_address", "a/b %2F é").getLimitRemaining());
        assertEquals(2, one("edge", "remote_address", "a/b/%2F é").getLimitRemaining());
    }

    @Test
    void aGlobalPolicyIsOneBucketForEveryValue()
    {
        assertEquals(Code.OK, one("edge", "api_key", "a").getCode());
        assertEquals(Code.OK, one("edge", "api_key", "b").getCode());
        assertEquals(Code.OVER_LIMIT, one("edge", "api_key", "c").getCode());
    }

    @Test
    void anExactValueOutranksAnyValueAtTheFirstEntryWhereSelectorsDiffer()
    {
        final DescriptorStatus login = one("edge", "path", "/login");
        assertEquals("login", login.getCurrentLimit().getName());
        assertEquals(RateLimit.Unit.MINUTE, login.getCurrentLimit().getUnit());
        assertEquals(Code.OK, one("edge", "path", "/login").getCode());
        assertEquals(Code.OVER_LIMIT, one("edge", "path", "/login").getCode());
        final DescriptorStatus other = one("edge", "path", "/orders");
        assertEquals(Code.OK, other.getCode());
        // 100 per 10 s, told to Envoy exactly in the smallest unit that can say it.
        assertEquals(RateLimit.newBuilder().setName("any-path").setRequestsPerUnit(10).setUnit(RateLimit.Unit.SECOND).build(),
            other.getCurrentLimit());
        // tenant=acme (exact) + user=bob beats tenant=* + user=bob (exact): the first entry decides.
        final DescriptorStatus acmeBob = one("edge", "tenant", "acme", "user", "bob");
        assertEquals("acme-users", acmeBob.getCurrentLimit().getName());
        assertEquals(Code.OVER_LIMIT, one("edge", "tenant", "acme", "user", "bob").getCode());
        assertEquals("bob-anywhere", one("edge", "tenant", "globex", "user", "bob").getCurrentLimit().getName());
    }

    @Test
    void aDescriptorNoPolicySelectsHasNoLimitNotTheDefaultPolicys()
    {
        for (int i = 0; i < 5; i++) // the default allows one an hour
        {
            for (final DescriptorStatus status : new DescriptorStatus[] {
                one("unknown-domain", "remote_address", "10.0.0.1"),
                one("edge", "user_agent", "curl"),
                one("edge", "path", "/login", "method", "GET"),
                one("edge", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5", "f", "6")})
            {
                assertEquals(DescriptorStatus.newBuilder().setCode(Code.OK).build(), status);
            }
        }
    }

    @Test
    void descriptorsAreDecidedEachOnItsOwnAndOneOverTheLimitMakesTheAnswerOverLimit()
    {
        final RateLimitRequest both = request("edge", descriptor("path", "/login"), descriptor("remote_address", "10.0.0.9"));
        assertEquals(Code.OK, call(both).getOverallCode());
        assertEquals(Code.OK, call(both).getOverallCode());
        final RateLimitResponse third = call(both);
        assertEquals(Code.OVER_LIMIT, third.getOverallCode());
        assertEquals(Code.OVER_LIMIT, third.getStatuses(0).getCode());
        assertEquals(Code.OK, third.getStatuses(1).getCode());
        assertEquals(0, third.getStatuses(1).getLimitRemaining(), "the other descriptor is charged: not all-or-none");
    }

    @Test
    void hitsAddendChargesThatManyTokensAndADescriptorsOwnOverridesTheRequests()
    {
        final RateLimitRequest two = request("edge", descriptor("remote_address", "10.0.0.3")).toBuilder().setHitsAddend(2).build();
        assertEquals(1, call(two).getStatuses(0).getLimitRemaining());
        assertEquals(Code.OVER_LIMIT, call(two).getOverallCode());
        final RateLimitDescriptor one = descriptor("remote_address", "10.0.0.3").toBuilder().setHitsAddend(UInt64Value.of(1)).build();
        assertEquals(Code.OK, call(two.toBuilder().setDescriptors(0, one).build()).getOverallCode());
    }

    @Test
    void aShadowPolicyAnswersOkAndCountsWhatItWouldHaveDenied()
    {
        for (int i = 0; i < 4; i++)
        {
            assertEquals(Code.OK, one("shadowed", "ip", "10.0.0.4").getCode());
        }
        final String scrape = node.metrics().scrape();
        assertTrue(scrape.contains("limiter_shadow_decisions_total{outcome=\"would_deny\",policy=\"shadow-ip\"} 3.0"), scrape);
    }

    @Test
    void responseHeadersAreAddedWhenAsked() throws InterruptedException
    {
        assertEquals(0, call(request("edge", descriptor("remote_address", "10.0.0.5"))).getResponseHeadersToAddCount());
        stopGateway();
        startGateway(true);
        final RateLimitRequest both = request("edge", descriptor("path", "/orders"), descriptor("remote_address", "10.0.0.5"));
        Map<String, String> headers = headers(call(both));
        // w: the time an empty bucket takes to fill (3 tokens at 1 an hour).
        assertEquals("\"per-ip\";q=3;w=10800", headers.get("RateLimit-Policy"), "the descriptor with the least left: " + headers);
        assertTrue(headers.get("RateLimit").startsWith("\"per-ip\";r=1;t="), headers.toString());
        assertFalse(headers.containsKey("Retry-After"));
        assertTrue(headers.getOrDefault("Limiter-Decision-Id", "").matches("[0-9a-f]{16}-[0-9]+"), headers.toString());
        call(both);
        headers = headers(call(both));
        assertTrue(headers.get("RateLimit").startsWith("\"per-ip\";r=0;t="), headers.toString());
        final long retryAfter = Long.parseLong(headers.get("Retry-After"));
        assertTrue(retryAfter > 3000 && retryAfter <= 3600, headers.toString());
    }

    private static Map<String, String> headers(final RateLimitResponse response)
    {
        return response.getResponseHeadersToAddList().stream().collect(Collectors.toMap(HeaderValue::getKey, HeaderValue::getValue));
    }

    @Test
    void onlyARequestWithNoDomainNoDescriptorsOrTooManyIsRefusedWholeAndItSpendsNothing()
    {
        assertRefused(request("", descriptor("remote_address", "10.0.0.6")), "domain: required");
        assertRefused(request("edge"), "descriptors: at least one");
        final RateLimitRequest.Builder many = RateLimitRequest.newBuilder().setDomain("edge");
        for (int i = 0; i <= RateLimitGateway.MAX_DESCRIPTORS; i++)
        {
            many.addDescriptors(descriptor("remote_address", "10.0.0.6"));
        }
        assertRefused(many.build(), "descriptors: at most 64");
        assertEquals(2, one("edge", "remote_address", "10.0.0.6").getLimitRemaining(), "nothing was charged");
        assertEquals(3, rls.gateway().failed());
    }

    @Test
    void aDescriptorWithNoEntriesAnEmptyKeyOrALimitOverrideIsAnsweredOnItsOwnAndTheOthersAreDecided()
    {
        final RateLimitDescriptor overridden = descriptor("remote_address", "10.0.0.8").toBuilder()
            .setLimit(RateLimitDescriptor.RateLimitOverride.newBuilder().setRequestsPerUnit(1_000_000).setUnit(
                io.envoyproxy.envoy.type.v3.RateLimitUnit.SECOND)).build();
        for (int i = 0; i < 5; i++)
        {
            final RateLimitResponse response = call(request("edge", descriptor("remote_address", "10.0.0.9"),
                RateLimitDescriptor.getDefaultInstance(), descriptor("", "x"), overridden));
            assertEquals(4, response.getStatusesCount());
            assertEquals(i < 3 ? Code.OK : Code.OVER_LIMIT, response.getStatuses(0).getCode(), "call " + i);
            assertEquals(DescriptorStatus.newBuilder().setCode(Code.OK).build(), response.getStatuses(1), "no entries: no limit");
            assertEquals(DescriptorStatus.newBuilder().setCode(Code.OK).build(), response.getStatuses(2), "no selector has an empty key");
            // The override is not taken: the store's policy (3 an hour) decides.
            assertEquals(i < 3 ? Code.OK : Code.OVER_LIMIT, response.getStatuses(3).getCode(), "call " + i);
            assertEquals("per-ip", response.getStatuses(3).getCurrentLimit().getName());
            assertEquals(i < 3 ? Code.OK : Code.OVER_LIMIT, response.getOverallCode());
        }
        assertEquals(5, rls.gateway().overridesIgnored());
        assertEquals(0, rls.gateway().failed());
    }

    @Test
    void aValueWithAControlCharacterNeverFailsTheCallSoALimitThatIsOverStillHolds()
    {
        for (int i = 0; i < 3; i++)
        {
            one("edge", "remote_address", "10.0.0.20");
        }
        assertEquals(Code.OVER_LIMIT, one("edge", "remote_address", "10.0.0.20").getCode());
        // U+0085 (NEL) is valid UTF-8 that an HTTP header can carry and Envoy copies into a descriptor as it is.
        for (final String value : new String[] {"\u0085", "a\u0000b", "\u009b[31m", "\u2028", "%C2%85", " ", "x".repeat(4000)})
        {
            for (int i = 0; i < 20; i++)
            {
                final RateLimitResponse response = call(request("edge", descriptor("remote_address", "10.0.0.20"), descriptor("user", value)));
                assertEquals(Code.OVER_LIMIT, response.getOverallCode(), "value " + value.codePointAt(0) + ": " + response);
                assertEquals(Code.OVER_LIMIT, response.getStatuses(0).getCode());
                assertEquals("users", response.getStatuses(1).getCurrentLimit().getName());
            }
        }
        assertEquals(0, rls.gateway().failed());
    }

    @Test
    void bytesThatAreNotUtf8AreAValueOfTheirOwnAndNeverFailTheCall()
    {
        for (int i = 0; i < 3; i++)
        {
            one("edge", "remote_address", "10.0.0.21");
        }
        // Envoy sends header bytes 0x80-0xFF as they are: not UTF-8, which Envoy's own message type cannot even hold here.
        final byte[][] values = {{(byte)0x80}, {(byte)0xC2}, {(byte)0xFF, (byte)0xFE}, {'a', (byte)0xC0, (byte)0x80}, {(byte)0xED, (byte)0xA0, (byte)0x80}};
        for (final byte[] value : values)
        {
            final RawRateLimitRequest request = RawRateLimitRequest.newBuilder().setDomain(ByteString.copyFromUtf8("edge"))
                .addDescriptors(raw("remote_address", ByteString.copyFromUtf8("10.0.0.21")))
                .addDescriptors(raw("user", ByteString.copyFrom(value)))
                .build();
            final RateLimitResponse response = callRaw(request);
            assertEquals(Code.OVER_LIMIT, response.getOverallCode(), response.toString());
            assertEquals(Code.OK, response.getStatuses(1).getCode());
            assertEquals(4, response.getStatuses(1).getLimitRemaining(), "its own bucket: " + response);
        }
        // 0x80 alone and the text "%80" are two values, two buckets.
        final RateLimitResponse text = call(request("edge", descriptor("user", "%80")));
        assertEquals(4, text.getStatuses(0).getLimitRemaining());
        assertEquals(0, rls.gateway().failed());
    }

    private static RawRateLimitDescriptor raw(final String key, final ByteString value)
    {
        return RawRateLimitDescriptor.newBuilder().addEntries(RawEntry.newBuilder().setKey(ByteString.copyFromUtf8(key)).setValue(value)).build();
    }

    /** A call whose request is written as bytes, as Envoy's C++ serializer writes a string field that is not UTF-8. */
    private RateLimitResponse callRaw(final RawRateLimitRequest request)
    {
        final MethodDescriptor<RawRateLimitRequest, RateLimitResponse> method = RateLimitServiceGrpc.getShouldRateLimitMethod()
            .toBuilder(ProtoUtils.marshaller(RawRateLimitRequest.getDefaultInstance()), ProtoUtils.marshaller(RateLimitResponse.getDefaultInstance()))
            .build();
        return ClientCalls.blockingUnaryCall(channel, method, CallOptions.DEFAULT.withDeadlineAfter(2, TimeUnit.SECONDS), request);
    }

    @Test
    void aDescriptorsOwnHitsAddendOfZeroChecksWithoutChargingAndIsOverLimitWhenNoTokenIsLeft()
    {
        final RateLimitDescriptor check = descriptor("remote_address", "10.0.0.22").toBuilder().setHitsAddend(UInt64Value.of(0)).build();
        for (int i = 0; i < 5; i++)
        {
            final DescriptorStatus status = call(request("edge", check)).getStatuses(0);
            assertEquals(Code.OK, status.getCode());
            assertEquals(3, status.getLimitRemaining(), "nothing charged");
        }
        for (int i = 0; i < 3; i++)
        {
            one("edge", "remote_address", "10.0.0.22");
        }
        final RateLimitResponse over = call(request("edge", check, descriptor("path", "/orders")));
        assertEquals(Code.OVER_LIMIT, over.getOverallCode());
        assertEquals(Code.OVER_LIMIT, over.getStatuses(0).getCode());
        assertEquals(0, over.getStatuses(0).getLimitRemaining());
        // A request-level 0 means 1, as in envoyproxy/ratelimit.
        final RateLimitRequest zero = request("edge", descriptor("remote_address", "10.0.0.23")).toBuilder().setHitsAddend(0).build();
        assertEquals(2, call(zero).getStatuses(0).getLimitRemaining());
    }

    @Test
    void aCostBeyondAnyLimitIsOverLimitForALimitedDescriptorChargesNothingAndLeavesTheOthersDecided()
    {
        final RateLimitRequest huge = request("edge", descriptor("remote_address", "10.0.0.24"), descriptor("user_agent", "curl"),
            descriptor("user", "admin")).toBuilder().setHitsAddend(-1).build(); // 2^32-1, above 2^31-1
        for (int i = 0; i < 3; i++)
        {
            final RateLimitResponse response = call(huge);
            assertEquals(Code.OVER_LIMIT, response.getOverallCode());
            assertEquals(Code.OVER_LIMIT, response.getStatuses(0).getCode());
            assertEquals(Code.OK, response.getStatuses(1).getCode(), "no limit: any cost");
            assertEquals(Code.OK, response.getStatuses(2).getCode(), "unlimited: any cost");
        }
        final RateLimitDescriptor ownHuge = descriptor("remote_address", "10.0.0.24").toBuilder().setHitsAddend(UInt64Value.of(-1L)).build();
        assertEquals(Code.OVER_LIMIT, call(request("edge", ownHuge)).getOverallCode(), "2^64-1 as a descriptor's own");
        final RateLimitRequest aboveBurst = request("edge", descriptor("remote_address", "10.0.0.24")).toBuilder().setHitsAddend(4).build();
        assertEquals(Code.OVER_LIMIT, call(aboveBurst).getOverallCode());
        assertEquals(2, one("edge", "remote_address", "10.0.0.24").getLimitRemaining(), "none of it was charged: the first hit leaves 2 of 3");
    }

    @Test
    void anUnlimitedPolicysDescriptorsAreOkWithTheLargestRemainingAndAReplacedPolicyIsNotCharged()
    {
        for (int i = 0; i < 10; i++)
        {
            final DescriptorStatus admin = one("edge", "user", "admin");
            assertEquals(DescriptorStatus.newBuilder().setCode(Code.OK).setLimitRemaining(-1).build(), admin, "uint32's largest, as there");
        }
        // plan=vip replaces 'users': a request that carries both is limited by vip alone.
        for (int i = 0; i < 7; i++)
        {
            final RateLimitResponse both = call(request("edge", descriptor("user", "carol"), descriptor("plan", "vip")));
            assertEquals(Code.OK, both.getOverallCode(), "call " + i);
            assertEquals(DescriptorStatus.newBuilder().setCode(Code.OK).build(), both.getStatuses(0), "replaced: no limit, not charged");
            assertEquals("vip", both.getStatuses(1).getCurrentLimit().getName());
        }
        assertEquals(4, one("edge", "user", "carol").getLimitRemaining(), "carol's own bucket was never charged while replaced");
    }

    private void assertRefused(final RateLimitRequest request, final String message)
    {
        final StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> call(request));
        assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode());
        assertTrue(e.getStatus().getDescription().contains(message), e.getStatus().getDescription());
    }

    @Test
    void withNoNodeAnsweringFailClosedPoliciesAreOverLimitFailOpenOnesSpendTheirEmergencyBudgetAndTheAnswerSaysSo()
    {
        assertEquals(Code.OK, one("payments", "account", "a1").getCode());
        node.close();
        node = null;
        final long start = System.nanoTime();
        final RateLimitResponse closed = call(request("payments", descriptor("account", "a1")));
        final RateLimitResponse open = call(request("edge", descriptor("remote_address", "10.0.0.7")));
        final RateLimitResponse none = call(request("edge", descriptor("user_agent", "curl")));
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(1), "each within the gateway's 200 ms deadline");
        assertEquals(Code.OVER_LIMIT, closed.getOverallCode());
        assertEquals(Code.OK, open.getOverallCode());
        assertEquals(Code.OK, none.getOverallCode());
        for (final RateLimitResponse local : new RateLimitResponse[] {closed, open, none})
        {
            assertEquals(1, local.getDynamicMetadata().getFieldsOrThrow("decided_locally").getNumberValue(), local.toString());
        }
        assertEquals(3, rls.gateway().decidedLocally());
    }
}
