package dev.limiter.envoy;

import com.google.protobuf.ByteString;
import com.google.protobuf.UInt64Value;
import dev.limiter.client.LimiterClient;
import dev.limiter.envoy.raw.RawEntry;
import dev.limiter.envoy.raw.RawRateLimitDescriptor;
import dev.limiter.envoy.raw.RawRateLimitRequest;
import dev.limiter.protocol.EnvoyDescriptors;
import dev.limiter.server.ServerConfig;
import dev.limiter.server.StoreServer;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ClientCalls;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Envoy's gateway attacked with the values an HTTP client can put in the headers Envoy copies into
 * descriptors (and with requests only a caller of the gRPC port itself could send).
 */
@Timeout(120)
class RateLimitGatewayAttackTest
{
    private static final String POLICIES = "{\"version\":1,\"policies\":[" +
        RateLimitServiceTest.policy("per-ip", "edge", "[{\"key\":\"remote_address\"}]", "\"rate\":1000,\"period\":\"1s\",\"burst\":1000") + "," +
        RateLimitServiceTest.policy("users", "edge", "[{\"key\":\"user\"}]", "\"rate\":1,\"period\":\"3600s\",\"burst\":1") + "," +
        RateLimitServiceTest.policy("pairs", "edge", "[{\"key\":\"a\"},{\"key\":\"b\"}]", "\"rate\":1,\"period\":\"3600s\",\"burst\":1") +
        "],\"defaultPolicy\":{\"id\":\"baseline\",\"rate\":1,\"period\":\"3600s\",\"burst\":1,\"owner\":\"t\"}}";

    @TempDir
    Path dir;

    private StoreServer node;
    private RlsServer rls;
    private ManagedChannel channel;

    private void start(final Duration storeDeadline) throws Exception
    {
        final Path policies = dir.resolve("policies.json");
        Files.writeString(policies, POLICIES);
        node = new StoreServer(new ServerConfig().host("127.0.0.1").port(0).adminPort(-1).shards(1).ioThreads(1)
            .policiesFile(policies).dataDir(dir.resolve("node"))).start();
        rls = RlsServer.start(LimiterClient.builder().endpoints("127.0.0.1:" + node.port()).deadline(storeDeadline), 1,
            new InetSocketAddress("127.0.0.1", 0), storeDeadline, false);
        channel = NettyChannelBuilder.forAddress("127.0.0.1", rls.port()).usePlaintext().build();
    }

    @AfterEach
    void stop() throws InterruptedException
    {
        if (channel != null)
        {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        if (rls != null)
        {
            rls.close();
        }
        if (node != null)
        {
            node.close();
        }
    }

    private RateLimitResponse call(final RawRateLimitRequest request, final long deadlineMillis)
    {
        return call(channel, request, deadlineMillis);
    }

    private static RateLimitResponse call(final ManagedChannel channel, final RawRateLimitRequest request, final long deadlineMillis)
    {
        final MethodDescriptor<RawRateLimitRequest, RateLimitResponse> method = RateLimitServiceGrpc.getShouldRateLimitMethod()
            .toBuilder(ProtoUtils.marshaller(RawRateLimitRequest.getDefaultInstance()), ProtoUtils.marshaller(RateLimitResponse.getDefaultInstance()))
            .build();
        return ClientCalls.blockingUnaryCall(channel, method, CallOptions.DEFAULT.withDeadlineAfter(deadlineMillis, TimeUnit.MILLISECONDS), request);
    }

    private static RawRateLimitDescriptor raw(final String... keyValues)
    {
        final RawRateLimitDescriptor.Builder d = RawRateLimitDescriptor.newBuilder();
        for (int i = 0; i + 1 < keyValues.length; i += 2)
        {
            d.addEntries(RawEntry.newBuilder().setKey(ByteString.copyFromUtf8(keyValues[i])).setValue(ByteString.copyFromUtf8(keyValues[i + 1])));
        }
        return d.build();
    }

    private static RawRateLimitDescriptor rawBytes(final String key, final byte[] value)
    {
        return RawRateLimitDescriptor.newBuilder().addEntries(RawEntry.newBuilder().setKey(ByteString.copyFromUtf8(key))
            .setValue(ByteString.copyFrom(value))).build();
    }

    private static RawRateLimitRequest request(final RawRateLimitDescriptor... descriptors)
    {
        final RawRateLimitRequest.Builder r = RawRateLimitRequest.newBuilder().setDomain(ByteString.copyFromUtf8("edge"));
        for (final RawRateLimitDescriptor d : descriptors)
        {
            r.addDescriptors(d);
        }
        return r.build();
    }

    @Test
    void valuesThatLookAlikeAfterEscapingOrDigestingKeepBucketsOfTheirOwn() throws Exception
    {
        start(Duration.ofSeconds(2));
        final String longValue = "v".repeat(200);
        final String digestKey = EnvoyDescriptors.bucketKeyOfText(List.of(longValue)); // e~ and 32 hex digits
        final Map<String, RawRateLimitDescriptor[]> pairs = new LinkedHashMap<>();
        pairs.put("'|' vs '%7C'", new RawRateLimitDescriptor[] {raw("user", "|"), raw("user", "%7C")});
        pairs.put("'a b' vs 'a%20b'", new RawRateLimitDescriptor[] {raw("user", "a b"), raw("user", "a%20b")});
        pairs.put("U+0085 vs '%C2%85'", new RawRateLimitDescriptor[] {raw("user", "\u0085"), raw("user", "%C2%85")});
        pairs.put("byte 0x80 vs '%80'", new RawRateLimitDescriptor[] {rawBytes("user", new byte[] {(byte)0x80}), raw("user", "%80")});
        pairs.put("bytes C0 80 (overlong NUL) vs byte 00", new RawRateLimitDescriptor[] {rawBytes("user", new byte[] {(byte)0xC0, (byte)0x80}),
            rawBytes("user", new byte[] {0})});
        pairs.put("'bob' vs 'bob\\t'", new RawRateLimitDescriptor[] {raw("user", "bob"), raw("user", "bob\t")});
        pairs.put("'bob' vs 'bob U+00A0'", new RawRateLimitDescriptor[] {raw("user", "bob1"), raw("user", "bob1\u00A0")});
        pairs.put("'bob' vs 'bob U+3000'", new RawRateLimitDescriptor[] {raw("user", "bob2"), raw("user", "bob2\u3000")});
        pairs.put("'Bob' vs 'bob'", new RawRateLimitDescriptor[] {raw("user", "Bob3"), raw("user", "bob3")});
        pairs.put("a 200-byte value vs its digest's text", new RawRateLimitDescriptor[] {raw("user", longValue), raw("user", digestKey.substring(1))});
        pairs.put("a 200-byte value vs the digest's key text", new RawRateLimitDescriptor[] {raw("user", longValue + "x"), raw("user", digestKey)});
        pairs.put("64 bytes of key vs 65", new RawRateLimitDescriptor[] {raw("user", "w".repeat(62)), raw("user", "w".repeat(63))});
        pairs.put("a='x|y',b='z' vs a='x',b='y|z'", new RawRateLimitDescriptor[] {raw("a", "x|y", "b", "z"), raw("a", "x", "b", "y|z")});
        pairs.put("a='x/b/y',b='z' vs a='x',b='y/b/z'", new RawRateLimitDescriptor[] {raw("a", "x/b/y", "b", "z"), raw("a", "x", "b", "y/b/z")});
        pairs.put("'' vs ' '", new RawRateLimitDescriptor[] {raw("user", ""), raw("user", " ")});
        final List<String> shared = new ArrayList<>();
        for (final Map.Entry<String, RawRateLimitDescriptor[]> pair : pairs.entrySet())
        {
            final RateLimitResponse first = call(request(pair.getValue()[0]), 2_000);
            final RateLimitResponse second = call(request(pair.getValue()[1]), 2_000);
            if (first.getOverallCode() != Code.OK || second.getOverallCode() != Code.OK)
            {
                shared.add(pair.getKey() + " (" + first.getOverallCode() + ", " + second.getOverallCode() + ")");
            }
        }
        System.out.println("pairs tried: " + pairs.keySet() + "; sharing a bucket: " + shared);
        assertEquals(List.of(), shared, "values that share a bucket (burst 1: the second is refused)");
    }

    @Test
    void noInputOfOneDescriptorFailsTheCallOrFreesAnotherDescriptorOverItsLimit() throws Exception
    {
        start(Duration.ofSeconds(2));
        // 10.0.0.9 is over its limit; every request below carries it beside one odd descriptor.
        final RawRateLimitDescriptor over = raw("user", "over");
        call(request(over), 2_000);
        assertEquals(Code.OVER_LIMIT, call(request(over), 2_000).getOverallCode());
        final Map<String, RawRateLimitDescriptor> odd = new LinkedHashMap<>();
        final RawRateLimitDescriptor.Builder many = RawRateLimitDescriptor.newBuilder();
        for (int i = 0; i < 20_000; i++)
        {
            many.addEntries(RawEntry.newBuilder().setKey(ByteString.copyFromUtf8("k")).setValue(ByteString.copyFromUtf8("v")));
        }
        odd.put("20,000 entries", many.build());
        odd.put("6 entries", raw("a", "1", "b", "2", "c", "3", "d", "4", "e", "5", "f", "6"));
        odd.put("an empty key", raw("", "x"));
        odd.put("a key of invalid UTF-8", rawBytes("user", new byte[] {(byte)0xFF}).toBuilder()
            .setEntries(0, RawEntry.newBuilder().setKey(ByteString.copyFrom(new byte[] {(byte)0xFF, 0, (byte)0xC0})).setValue(ByteString.copyFromUtf8("x"))).build());
        odd.put("a 200 KiB value", raw("user", "x".repeat(200 * 1024)));
        odd.put("hits_addend 0", raw("user", "h0").toBuilder().setHitsAddend(UInt64Value.of(0)).build());
        odd.put("hits_addend 2^63", raw("user", "h63").toBuilder().setHitsAddend(UInt64Value.of(Long.MIN_VALUE)).build());
        odd.put("hits_addend 2^64-1", raw("user", "h64").toBuilder().setHitsAddend(UInt64Value.of(-1L)).build());
        odd.put("hits_addend 2^31", raw("user", "h31").toBuilder().setHitsAddend(UInt64Value.of(1L << 31)).build());
        odd.put("a limit override of garbage", raw("user", "lim").toBuilder().setLimit(ByteString.copyFrom(new byte[] {(byte)0xFF, (byte)0xFF})).build());
        odd.put("every byte value", rawBytes("user", everyByte()));
        final List<String> problems = new ArrayList<>();
        for (final Map.Entry<String, RawRateLimitDescriptor> input : odd.entrySet())
        {
            try
            {
                final RateLimitResponse response = call(request(input.getValue(), over), 5_000);
                if (response.getOverallCode() != Code.OVER_LIMIT || response.getStatuses(1).getCode() != Code.OVER_LIMIT)
                {
                    problems.add(input.getKey() + ": " + response.getOverallCode());
                }
            }
            catch (final StatusRuntimeException e)
            {
                problems.add(input.getKey() + ": the call failed " + e.getStatus());
            }
        }
        // The request as a whole, with the domain and request-level fields an Envoy configuration sets.
        for (final byte[] domain : new byte[][] {{(byte)0xFF}, "edge\u0000".getBytes(StandardCharsets.UTF_8), "e".repeat(100_000).getBytes(StandardCharsets.UTF_8)})
        {
            try
            {
                call(RawRateLimitRequest.newBuilder().setDomain(ByteString.copyFrom(domain)).addDescriptors(over).build(), 5_000);
            }
            catch (final StatusRuntimeException e)
            {
                problems.add("domain of " + domain.length + " bytes: " + e.getStatus());
            }
        }
        System.out.println("odd descriptors beside one over its limit: " + odd.keySet() + "; problems: " + problems);
        assertEquals(List.of(), problems);
    }

    private static byte[] everyByte()
    {
        final byte[] all = new byte[256];
        for (int i = 0; i < 256; i++)
        {
            all[i] = (byte)i;
        }
        return all;
    }
}
