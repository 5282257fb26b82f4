package dev.limiter.cli;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(30)
class HotKeysCommandTest
{
    static final String REPORT = """
        {"sampleEvery":16,"shards":[{"shard":0,"windowSeconds":1.0,"sampled":"4000","top":[
          {"policyId":"orders","policyVersion":"3","scope":"TENANT","key":"big-customer","share":0.62,"overestimate":"40",
           "tokensPerSecond":"39680"},
          {"policyId":"orders-global","policyVersion":"1","scope":"GLOBAL","key":"","share":0.2}]}]}""";

    @TempDir
    Path dir;

    private final List<FakeAdminServer> servers = new ArrayList<>();

    @AfterEach
    void stopServers()
    {
        servers.forEach(FakeAdminServer::close);
    }

    private PolicyCommandTest.Result hotKeys(final String... args)
    {
        return CommandRun.capture(HotKeysCommand::run, args, Map.of(AdminClient.TOKEN_ENVIRONMENT, PolicyCommandTest.TOKEN), dir);
    }

    private static String unusedAddress() throws Exception
    {
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()))
        {
            return "127.0.0.1:" + probe.getLocalPort();
        }
    }

    @Test
    void shouldAskEveryNodeAndListEachOnesKeysSkippingOneThatIsDown() throws Exception
    {
        final FakeAdminServer first = FakeAdminServer.start().answer(200, REPORT);
        final FakeAdminServer second = FakeAdminServer.start().answer(200, REPORT);
        servers.add(first);
        servers.add(second);
        final String down = unusedAddress();

        final PolicyCommandTest.Result result = hotKeys("--admin", first.address() + "," + down + "," + second.address());

        assertEquals(0, result.status(), result.toString());
        assertEquals("/v1/hot-keys", first.last().rawPath());
        assertEquals("Bearer " + PolicyCommandTest.TOKEN, second.last().authorization());
        assertTrue(result.out().contains(first.address()) && result.out().contains(second.address()), result.out());
        assertTrue(result.out().contains("big-customer") && result.out().contains("62.0%") && result.out().contains("1.0%") &&
            result.out().contains("39680"), result.out());
        assertTrue(result.out().contains("(global)") && result.out().contains("orders-global"), result.out());
        assertTrue(result.err().contains("skipped " + down), result.err());
    }

    @Test
    void shouldPrintOneJsonDocumentKeyedByNode() throws Exception
    {
        final FakeAdminServer node = FakeAdminServer.start().answer(200, REPORT);
        servers.add(node);

        final PolicyCommandTest.Result result = hotKeys("--admin", node.address(), "--json");

        assertEquals(0, result.status(), result.toString());
        final com.google.gson.JsonObject all = com.google.gson.JsonParser.parseString(result.out()).getAsJsonObject();
        assertEquals("big-customer", all.getAsJsonObject(node.address()).getAsJsonArray("shards").get(0).getAsJsonObject()
            .getAsJsonArray("top").get(0).getAsJsonObject().get("key").getAsString());
    }

    @Test
    void shouldFailWithOneLineWhenNoNodeAnswersOrTheTokenIsRefused() throws Exception
    {
        final PolicyCommandTest.Result none = hotKeys("--admin", unusedAddress() + "," + unusedAddress());
        assertEquals(1, none.status(), none.toString());
        PolicyCommandTest.assertOneLineFailure(none, "limiter hot-keys: no node gave its hot keys: ");

        final FakeAdminServer refusing = FakeAdminServer.start().answer(401, "{\"error\":\"missing or wrong bearer token\"}");
        servers.add(refusing);
        final PolicyCommandTest.Result refused = hotKeys("--admin", refusing.address());
        assertEquals(1, refused.status(), refused.toString());
        PolicyCommandTest.assertOneLineFailure(refused, "limiter hot-keys: missing or wrong bearer token (HTTP 401 from " + refusing.address());
    }
}
