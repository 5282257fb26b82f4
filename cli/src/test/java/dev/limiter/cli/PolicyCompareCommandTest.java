package dev.limiter.cli;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(30)
class PolicyCompareCommandTest
{
    private static final String NODE_A = """
        {"policy":"orders-api","enforcedVersion":3,"shadowVersion":4,"sinceMillis":1800000000000,"windowMillis":300000,
         "rows":[{"tenant":"acme","route":"/v1/orders/{id}","decisions":100,"enforcedRejections":5,
                  "predictedRejections":40,"newlyRejected":35,"newlyFreed":0},
                 {"tenant":"initech","route":"/v1/orders/{id}","decisions":50,"enforcedRejections":0,
                  "predictedRejections":0,"newlyRejected":0,"newlyFreed":0}],
         "tracked":2,"untracked":7}""";
    private static final String NODE_B = """
        {"policy":"orders-api","enforcedVersion":3,"shadowVersion":4,"sinceMillis":1799999700000,"windowMillis":300000,
         "rows":[{"tenant":"acme","route":"/v1/orders/{id}","decisions":10,"enforcedRejections":0,
                  "predictedRejections":5,"newlyRejected":5,"newlyFreed":0},
                 {"tenant":"globex","route":"/v1/orders","decisions":20,"enforcedRejections":12,
                  "predictedRejections":2,"newlyRejected":0,"newlyFreed":10}],
         "tracked":2,"untracked":0}""";
    private static final String OLD_VERSION = """
        {"policy":"orders-api","enforcedVersion":3,"shadowVersion":2,"sinceMillis":1,"windowMillis":300000,
         "rows":[{"tenant":"hooli","route":"/v1/orders","decisions":9,"enforcedRejections":0,
                  "predictedRejections":9,"newlyRejected":9,"newlyFreed":0}],"tracked":1,"untracked":0}""";

    @TempDir
    Path dir;

    private final List<FakeAdminServer> servers = new ArrayList<>();

    @AfterEach
    void stopServers()
    {
        servers.forEach(FakeAdminServer::close);
    }

    private FakeAdminServer node(final int status, final String body) throws Exception
    {
        final FakeAdminServer server = FakeAdminServer.start().answer(status, body);
        servers.add(server);
        return server;
    }

    private PolicyCommandTest.Result policy(final String... args)
    {
        return CommandRun.capture(PolicyCommand::run, args, Map.of(AdminClient.TOKEN_ENVIRONMENT,
            PolicyCommandTest.TOKEN), dir);
    }

    @Test
    void shouldSumTheNodesAndListTheNewlyRejectedAndFreedTenantsMostAffectedFirst() throws Exception
    {
        final FakeAdminServer a = node(200, NODE_A);
        final FakeAdminServer b = node(200, NODE_B);
        final FakeAdminServer stale = node(200, OLD_VERSION);

        final long before = System.currentTimeMillis();
        final PolicyCommandTest.Result result = policy("compare", "orders-api", "--since", "30m", "--admin",
            a.address() + "," + b.address() + "," + stale.address());

        assertEquals(0, result.status(), result.toString());
        assertEquals("/v1/policies/orders-api/compare", a.last().rawPath());
        final long since = Long.parseLong(a.last().rawQuery().replace("since=", ""));
        assertTrue(Math.abs(before - 1_800_000 - since) < 5_000, "30 minutes ago: " + since);
        final String out = result.out();
        assertTrue(out.contains("shadow version 4 against enforced version 3"), out);
        assertTrue(out.contains("counts start over when either version changes"), out);
        assertTrue(out.contains("skipped, other versions: " + stale.address() + " (counts shadow version 2"), out);
        final int acme = out.indexOf("acme");
        final int globex = out.indexOf("globex");
        assertTrue(acme > 0 && globex > acme, "acme (40 newly rejected) before globex (10 newly freed):\n" + out);
        assertTrue(out.matches("(?s).*acme\\s+/v1/orders/\\{id}\\s+40\\s+0\\s+110\\s+5\\s+45.*"), out);
        assertTrue(out.matches("(?s).*globex\\s+/v1/orders\\s+0\\s+10\\s+20\\s+12\\s+2.*"), out);
        assertFalse(out.contains("initech"), "no difference for initech: not listed\n" + out);
        assertFalse(out.contains("hooli"), "another version's counts never mix in\n" + out);
        assertTrue(out.contains("would newly reject 40 requests (1 tenant/route pairs) and newly free 10 (1 pairs), " +
            "of 187 decisions"), out);
        assertTrue(out.contains("7 decisions were of tenant/route pairs beyond the nodes' tables (untracked)"), out);
    }

    @Test
    void shouldPrintTheMergedComparisonAsJson() throws Exception
    {
        final FakeAdminServer a = node(200, NODE_A);
        final FakeAdminServer b = node(200, NODE_B);

        final PolicyCommandTest.Result result = policy("compare", "orders-api", "--json", "--admin",
            a.address() + "," + b.address());

        assertEquals(0, result.status(), result.toString());
        final String out = result.out();
        assertTrue(out.startsWith("{\"policy\":\"orders-api\",\"enforcedVersion\":3,\"shadowVersion\":4," +
            "\"sinceMillis\":1799999700000"), out);
        assertTrue(out.contains("{\"tenant\":\"acme\",\"route\":\"/v1/orders/{id}\",\"decisions\":110," +
            "\"enforcedRejections\":5,\"predictedRejections\":45,\"newlyRejected\":40,\"newlyFreed\":0}"), out);
        assertTrue(out.contains("\"tracked\":3,\"untracked\":7"), out);
    }

    @Test
    void shouldSayWhenThePolicyHasNoShadowVersionOrIsUnknown() throws Exception
    {
        final FakeAdminServer node = node(404,
            "{\"error\":\"policy orders-api has no shadow version in force: put a version with mode SHADOW, ...\"}");
        final PolicyCommandTest.Result none = policy("compare", "orders-api", "--admin", node.address());
        assertEquals(1, none.status(), none.toString());
        assertTrue(none.err().contains("limiter policy: policy orders-api has no shadow version in force"),
            none.err());
    }

    @Test
    void shouldSayWhenEveryNodeIsOlderThanTheCompareEndpoint() throws Exception
    {
        final FakeAdminServer old = node(404,
            "{\"error\":\"no such endpoint: GET /v1/policies/orders-api/compare (see docs/control-plane.md: ...)\"}");
        final PolicyCommandTest.Result result = policy("compare", "orders-api", "--admin", old.address());
        assertEquals(1, result.status(), result.toString());
        assertTrue(result.err().contains("skipped " + old.address() + ": an older node, its admin API has no " +
            "/v1/policies/{id}/compare"), result.err());
        assertTrue(result.err().contains("no node can compare: " + old.address() + " run an older build"),
            result.err());
    }

    @Test
    void shouldRefuseABadSinceBeforeSendingAnything() throws Exception
    {
        final FakeAdminServer node = node(200, NODE_A);
        final PolicyCommandTest.Result result = policy("compare", "orders-api", "--since", "yesterday", "--admin",
            node.address());
        assertEquals(2, result.status(), result.toString());
        assertTrue(result.err().contains("--since 'yesterday' is neither an RFC 3339 time"), result.err());
        assertEquals(2, policy("compare", "", "--admin", node.address()).status(), "an empty id");
    }
}
