package dev.limiter.cli;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static dev.limiter.cli.PolicyCommandTest.assertOneLineFailure;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(30)
class AppealCommandTest
{
    private static final String ID = "3f9a0c1be4d27a10-2";
    private static final String FOUND = "{\"id\":\"" + ID
        + "\",\"atMillis\":1765000000000,\"policy\":\"orders\",\"version\":3,"
        + "\"tenant\":\"acme\",\"route\":\"/v1/orders/{id}\",\"reason\":\"RATE_LIMITED\",\"node\":\"n2\"}";
    private static final String NEVER = "{\"error\":\"node n1 never sampled decision " + ID + "\"}";

    @TempDir
    Path dir;

    private final List<FakeAdminServer> servers = new ArrayList<>();
    private final Map<String, String> env = Map.of(AdminClient.TOKEN_ENVIRONMENT, PolicyCommandTest.TOKEN);

    @AfterEach
    void stopServers()
    {
        servers.forEach(FakeAdminServer::close);
    }

    private FakeAdminServer server() throws Exception
    {
        final FakeAdminServer server = FakeAdminServer.start().answer(404, NEVER);
        servers.add(server);
        return server;
    }

    private PolicyCommandTest.Result appeal(final String... args)
    {
        return CommandRun.capture(AppealCommand::run, args, env, dir);
    }

    @Test
    void addFindsTheDecisionOnTheMemberThatSampledItAndSendsItsPolicyVersionTenantAndRouteToTheLeader() throws Exception
    {
        final FakeAdminServer follower = server().answer("POST", "/v1/appeals", 421,
            "{\"error\":\"this node is not the leader\",\"leader\":\"\"}");
        final FakeAdminServer leader = server().answer("GET", "/v1/decisions/rejected/" + ID, 200, FOUND)
            .answer("POST", "/v1/appeals", 200, "{\"setVersion\":\"9\"}");

        final PolicyCommandTest.Result result = appeal("add", ID, "--owner", "payments", "--reason", "contracted burst",
            "--admin", follower.address() + "," + leader.address());

        assertEquals(0, result.status(), result.toString());
        assertEquals("appeal of decision " + ID + " recorded: policy orders v3, tenant acme, route /v1/orders/{id}\n",
            result.out());
        final FakeAdminServer.Seen posted = leader.last();
        assertEquals("POST", posted.method());
        assertTrue(posted.body().contains("\"policy\":\"orders\",\"version\":\"3\",\"tenant\":\"acme\"," +
            "\"route\":\"/v1/orders/{id}\",\"owner\":\"payments\",\"reason\":\"contracted burst\""), posted.body());
    }

    @Test
    void aDecisionNoMemberSampledNeedsThePolicyAndVersionAndOtherwiseNothingIsSent() throws Exception
    {
        final FakeAdminServer node = server().answer("POST", "/v1/appeals", 200, "{\"setVersion\":\"9\"}");

        final PolicyCommandTest.Result refused = appeal("add", ID, "--owner", "o", "--reason", "r", "--admin",
            node.address());
        assertOneLineFailure(refused, "limiter appeal: no member sampled decision " + ID);
        assertEquals(1, refused.status());
        assertTrue(refused.err().contains("--policy ID --version N"), refused.err());
        assertTrue(node.requests.stream().noneMatch(r -> r.method().equals("POST")), "nothing was sent");

        final PolicyCommandTest.Result given = appeal("add", ID, "--owner", "o", "--reason", "r", "--policy", "orders",
            "--version", "2", "--admin", node.address());
        assertEquals(0, given.status(), given.toString());
        assertTrue(given.out().endsWith("(no member had sampled it)\n"), given.out());
    }

    @Test
    void badInputIsRefusedBeforeAnyCall() throws Exception
    {
        final FakeAdminServer node = server();
        for (final String[] args : List.of(
            new String[] {"add", "nope", "--owner", "o", "--reason", "r"},
            new String[] {"add", ID, "--owner", " ", "--reason", "r"},
            new String[] {"add", ID, "--owner", "o", "--reason", ""},
            new String[] {"add", ID, "--owner", "o", "--reason", "r", "--policy", "orders"}))
        {
            final List<String> all = new ArrayList<>(List.of(args));
            all.addAll(List.of("--admin", node.address()));
            final PolicyCommandTest.Result result = appeal(all.toArray(String[]::new));
            assertOneLineFailure(result, "limiter appeal: ");
            assertEquals(2, result.status(), result.toString());
        }
        assertEquals(0, node.requests.size());
    }

    @Test
    void listShowsEachAppealWithItsPolicyOwnerAndReason() throws Exception
    {
        final FakeAdminServer node = server().answer("GET", "/v1/appeals", 200, "{\"appeals\":[{\"decisionId\":\""
            + ID + "\",\"policy\":\"orders\",\"version\":3,\"tenant\":\"acme\",\"route\":\"/v1/orders/{id}\","
            + "\"owner\":\"payments\"," +
            "\"reason\":\"contracted burst\",\"atMillis\":1765000000000,\"actor\":\"alice\"}]}");

        final PolicyCommandTest.Result result = appeal("list", "--since", "24h", "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        assertTrue(result.out().startsWith("DECISION"), result.out());
        assertTrue(result.out().contains(ID) && result.out().contains("payments")
            && result.out().contains("contracted burst"), result.out());
        assertTrue(node.last().rawQuery().startsWith("since="), node.last().rawQuery());
    }
}
