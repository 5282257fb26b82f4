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

/** {@code ./limiter cluster add|remove|members} go through the admin API with the token, to the leader. */
@Timeout(30)
class MembersCommandTest
{
    private static final String FOUR = "{\"members\":[{\"id\":\"n1\",\"address\":\"127.0.0.1:7401\"},{\"id\":\"n2\",\"address\":\"127.0.0.1:7402\"}," +
        "{\"id\":\"n3\",\"address\":\"127.0.0.1:7403\"},{\"id\":\"n4\",\"address\":\"127.0.0.1:7404\"}],\"leader\":\"n1\"}";

    @TempDir
    Path dir;

    private final List<FakeAdminServer> servers = new ArrayList<>();

    @AfterEach
    void stopServers()
    {
        servers.forEach(FakeAdminServer::close);
    }

    private FakeAdminServer server(final int status, final String body) throws Exception
    {
        final FakeAdminServer server = FakeAdminServer.start().answer(status, body);
        servers.add(server);
        return server;
    }

    private PolicyCommandTest.Result cluster(final String... args)
    {
        return CommandRun.capture(MembersCommand::run, args, Map.of(AdminClient.TOKEN_ENVIRONMENT, PolicyCommandTest.TOKEN), dir);
    }

    @Test
    void addSendsTheNewMemberToTheLeaderWithTheTokenAndReason() throws Exception
    {
        final FakeAdminServer follower = server(421, "{\"error\":\"this node is not the leader\",\"leader\":\"n1\"}");
        final FakeAdminServer leader = server(200, FOUR);
        final PolicyCommandTest.Result result = cluster("add", "--node-id", "n4", "--address", "127.0.0.1:7404", "--reason", "more capacity",
            "--admin", follower.address() + "," + leader.address());
        assertEquals(0, result.status(), result.toString());
        assertEquals("members now: n1=127.0.0.1:7401,n2=127.0.0.1:7402,n3=127.0.0.1:7403,n4=127.0.0.1:7404 (leader n1)\n", result.out());
        final FakeAdminServer.Seen seen = leader.last();
        assertEquals("PUT", seen.method());
        assertEquals("/v1/members/n4", seen.rawPath());
        assertEquals("reason=more%20capacity", seen.rawQuery());
        assertEquals("Bearer " + PolicyCommandTest.TOKEN, seen.authorization());
        assertTrue(seen.body().contains("\"address\":\"127.0.0.1:7404\""), seen.body());
    }

    @Test
    void removeAndListUseTheMembersResource() throws Exception
    {
        final FakeAdminServer node = server(200, FOUR);
        assertEquals(0, cluster("remove", "--node-id", "n3", "--admin", node.address()).status());
        assertEquals("DELETE", node.last().method());
        assertEquals("/v1/members/n3", node.last().rawPath());
        final PolicyCommandTest.Result list = cluster("members", "--admin", node.address(), "--json");
        assertEquals(0, list.status(), list.toString());
        assertEquals("GET", node.last().method());
        assertTrue(list.out().contains("\"leader\": \"n1\""), list.out());
    }

    @Test
    void badInputIsRefusedBeforeAnyCallAndARefusalIsOneLine() throws Exception
    {
        final FakeAdminServer node = server(409, "{\"error\":\"n4 is already a member at 127.0.0.1:7404; remove it first to move it; nothing changed\"}");
        final PolicyCommandTest.Result noAddress = cluster("add", "--node-id", "n4", "--admin", node.address());
        assertOneLineFailure(noAddress, "limiter cluster: --address HOST:PORT is required");
        assertEquals(2, noAddress.status());
        final PolicyCommandTest.Result unknown = cluster("grow", "--admin", node.address());
        assertOneLineFailure(unknown, "limiter cluster: unknown action 'grow'");
        assertTrue(node.requests.isEmpty(), "nothing was sent");

        final PolicyCommandTest.Result refused = cluster("add", "--node-id", "n4", "--address", "127.0.0.1:7404", "--admin", node.address());
        assertOneLineFailure(refused, "limiter cluster: n4 is already a member");
        assertEquals(1, refused.status());
    }
}
