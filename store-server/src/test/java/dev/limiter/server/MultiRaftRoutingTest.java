package dev.limiter.server;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;
import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.StatusJson;
import dev.limiter.protocol.status.GroupStatus;
import dev.limiter.protocol.status.ShardStatus;
import dev.limiter.protocol.status.StatusReport;
import dev.limiter.server.testing.AdminCalls;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.MultiRaftCluster;
import dev.limiter.server.testing.RawConnection;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static dev.limiter.server.testing.MultiRaftCluster.NO_REFILL;
import static dev.limiter.server.testing.MultiRaftCluster.SHARDS;
import static dev.limiter.server.testing.MultiRaftCluster.TOKEN;
import static dev.limiter.server.testing.MultiRaftCluster.tenantOn;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Three nodes in one JVM, three Raft groups (a {@link MultiRaftCluster}): each tenant is decided in its shard's group
 * by that group's leader, every group converges, and clients go straight to the leader that decides.
 */
@Timeout(180)
class MultiRaftRoutingTest
{
    /** A new cluster for each test, in a directory of its own; stopped after the test. */
    @RegisterExtension
    final MultiRaftCluster cluster = new MultiRaftCluster();

    @Test
    void eachNodeLeadsOneGroupDecidesItsShardAndEveryGroupConvergesOnEveryReplica() throws Exception
    {
        cluster.startAll();
        cluster.awaitSpreadLeaders();
        cluster.putOrders(NO_REFILL, 5);
        for (int shard = 0; shard < SHARDS; shard++)
        {
            for (int t = 0; t < 4; t++)
            {
                final String tenant = tenantOn(shard, t);
                for (int i = 0; i < 6; i++)
                {
                    // Five tokens per tenant, none refilled: the sixth call is refused.
                    assertEquals(i < 5, cluster.decide(tenant).allowed(), tenant + " call " + i);
                }
            }
        }
        // Each group logs each of its tenants' decisions (refusals too), and only those.
        Await.until("every group to apply its 24 decisions and converge on every replica", Duration.ofSeconds(20), () ->
            cluster.appliedIn("n1", 0) == 24 && cluster.appliedIn("n1", 1) == 24 && cluster.appliedIn("n1", 2) == 24 && cluster.converged());

        // A node asked for a shard it does not lead names that shard's leader.
        final String tenant = tenantOn(1, 0);
        final RawConnection.Answer answer = RawConnection.exchange(cluster.peers().get("n1").getPort(), MessageType.ACQUIRE,
            RawConnection.acquireBody(AcquireCodec.encodeFields(tenant, "", "", "/v1/orders/1", "", "")));
        assertEquals(ErrorCode.NOT_LEADER, answer.errorCode());
        assertEquals("127.0.0.1:" + cluster.peers().get("n2").getPort(), answer.errorMessage());

        // Status names every group's leader and every shard's.
        final String json = RawConnection.exchange(cluster.peers().get("n3").getPort(), MessageType.STATUS, new byte[0]).text();
        final StatusReport status = StatusJson.parse(json);
        assertEquals(List.of("n1", "n2", "n3"), status.getGroupsList().stream().map(GroupStatus::getLeader).toList(),
            json);
        assertEquals(150, status.getElectionTimeoutMs(),
            "every member's election timeout, for ./limiter status to compare: " + json);
        assertEquals("LEADER", status.getGroups(2).getRole(), json);
        final ShardStatus shard1 = status.getShards(1);
        assertEquals(List.of("FOLLOWER", 1, "127.0.0.1:" + cluster.peers().get("n2").getPort()),
            List.of(shard1.getRole(), shard1.getGroup(), shard1.getLeaderAddress()), json);
    }

    @Test
    void hierarchicalLimitsAreChargedAllOrNoneInTheGroupOfEachTenantAndARouteBudgetKeepsAShareInEachGroup() throws Exception
    {
        cluster.startAll();
        cluster.awaitSpreadLeaders();
        cluster.putOrders(NO_REFILL, 5);
        final HttpResponse<String> put = AdminCalls.call(HttpClient.newHttpClient(), cluster.nodes().get("n1").adminPort(), "PUT",
            "/v1/policies/orders-user", "{\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":1,\"period\":\"3600s\",\"burst\":2," +
                "\"scope\":\"PRINCIPAL\",\"stacked\":true,\"owner\":\"platform\",\"reason\":\"per user\"}", TOKEN);
        assertEquals(200, put.statusCode(), put.body());
        // The API's capacity, split into one share of 6 per shard (so per group): decided by each group's leader alone.
        final HttpResponse<String> global = AdminCalls.call(HttpClient.newHttpClient(), cluster.nodes().get("n1").adminPort(), "PUT",
            "/v1/policies/orders-global", "{\"selector\":{\"route\":\"/v1/{resource}/{id}\"},\"rate\":1,\"period\":\"3600s\",\"burst\":" +
                6 * SHARDS + ",\"scope\":\"GLOBAL\",\"stacked\":true,\"owner\":\"platform\",\"reason\":\"route capacity\"}", TOKEN);
        assertEquals(200, global.statusCode(), global.body());
        Await.until("every node to have the stacked policies in force", Duration.ofSeconds(10), () ->
            cluster.nodes().values().stream().allMatch(n -> n.policies().policies().stream().filter(p -> p.id().startsWith("orders-")).count() == 2));
        for (int shard = 0; shard < SHARDS; shard++)
        {
            // In each tenant's group: a user's third call is refused by its allowance (2), and once the
            // tenant's five tokens are spent the tenant's policy refuses the next user's second call.
            final String tenant = tenantOn(shard, 0);
            final List<String> answers = new ArrayList<>();
            for (final String user : List.of("u1", "u2", "u3"))
            {
                for (int i = 0; i < 3; i++)
                {
                    final Decision decision = decideAs(tenant, user);
                    answers.add(user + ":" + (decision.allowed() ? "ok" : decision.policyId()));
                }
            }
            assertEquals(List.of("u1:ok", "u1:ok", "u1:orders-user", "u2:ok", "u2:ok", "u2:orders-user", "u3:ok", "u3:orders",
                "u3:orders"), answers, "shard " + shard);
            // Five of the shard's six route tokens are spent: another tenant of the shard gets the sixth, then the share refuses.
            final String neighbour = tenantOn(shard, 1);
            assertTrue(decideAs(neighbour, "u1").allowed(), "shard " + shard);
            final Decision spent = decideAs(neighbour, "u1");
            assertFalse(spent.allowed(), "shard " + shard);
            assertEquals("orders-global", spent.policyId(), "shard " + shard + ": " + spent);
            assertEquals(6, spent.limit(), "the answer shows the shard's share: " + spent);
        }
        // Every replica replays each section at its shard's share (ReplicatedBucketsTest checks the share a replica uses).
        Await.until("every group to converge on every replica", Duration.ofSeconds(20),
            () -> cluster.converged() && cluster.appliedIn("n1", 1) > 0);
    }

    private Decision decideAs(final String tenant, final String principal) throws Exception
    {
        return cluster.decide(Descriptor.builder().tenant(tenant).principal(principal).route("/v1/orders/1").build());
    }

    @Test
    void aPolicyChangeInTheControlGroupGovernsDecisionsReplicatedInTheOtherGroups() throws Exception
    {
        cluster.startAll();
        cluster.awaitSpreadLeaders();
        // The deciders of groups 1 and 2 apply the new version from the control group, then decide under it.
        cluster.putOrders("{\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":1,\"burst\":2,\"owner\":\"test\",\"reason\":\"tighter\"}", 2);
        for (int shard = 1; shard < SHARDS; shard++)
        {
            final String tenant = tenantOn(shard, 0);
            assertTrue(cluster.decide(tenant).allowed());
            assertTrue(cluster.decide(tenant).allowed());
            final Decision third = cluster.decide(tenant);
            assertFalse(third.allowed(), "burst 2 under the new version: " + third);
            assertEquals(2, third.policyVersion(), third.toString());
        }
        Await.until("every group to converge on every replica", Duration.ofSeconds(20),
            () -> cluster.converged() && cluster.appliedIn("n1", 1) == 3);
    }

    @Test
    void aClientOfEveryNodeSendsEachTenantStraightToItsShardsLeaderAndFollowsAFailover() throws Exception
    {
        cluster.startAll();
        cluster.awaitSpreadLeaders();
        cluster.putOrders(NO_REFILL, 5);
        final String endpoints = String.join(",", cluster.peers().values().stream().map(a -> "127.0.0.1:" + a.getPort()).toList());
        try (LimiterClient client = LimiterClient.builder().endpoints(endpoints).connections(1).deadline(Duration.ofSeconds(3)).build())
        {
            // Until the client has the shard map a call may be sent to a node that does not lead its shard.
            Await.until("a round of calls that no node redirects", Duration.ofSeconds(10), () ->
            {
                final long before = client.stats().redirects();
                for (int shard = 0; shard < SHARDS; shard++)
                {
                    client.acquireBlocking(Descriptor.of(tenantOn(shard, 9), "/v1/orders/1"), 1);
                }
                return client.stats().redirects() == before;
            });
            final long clientRedirects = client.stats().redirects();
            final long redirects = nodeRedirects();
            int allowed = 0;
            for (int t = 0; t < 30; t++)
            {
                final String tenant = "steady-" + t;
                for (int i = 0; i < 6; i++)
                {
                    final Decision decision = client.acquireBlocking(Descriptor.of(tenant, "/v1/orders/1"), 1);
                    assertFalse(decision.degraded(), "decided by a node: " + decision);
                    allowed += decision.allowed() ? 1 : 0;
                }
            }
            assertEquals(30 * 5, allowed, "five tokens per tenant, whichever node decided it");
            assertEquals(clientRedirects, client.stats().redirects(), "in steady state no call is sent back");
            assertEquals(redirects, nodeRedirects(), "in steady state no node bounces a frame");

            // Group 1's leader dies: its tenants are decided by the new leader, within their deadlines.
            final String tenant = tenantOn(1, 3);
            cluster.nodes().remove("n2").halt();
            Await.until("group 1 to be decided by another node", Duration.ofSeconds(10), () -> cluster.decider(1) != null);
            for (int i = 0; i < 5; i++)
            {
                final Decision decision = client.acquireBlocking(Descriptor.of(tenant, "/v1/orders/1"), 1);
                assertFalse(decision.degraded(), "decided by the new leader: " + decision);
                assertTrue(decision.allowed(), "call " + i + ": " + decision);
            }
            final Decision sixth = client.acquireBlocking(Descriptor.of(tenant, "/v1/orders/1"), 1);
            assertFalse(sixth.degraded() || sixth.allowed(), "the sixth call is refused by a node: " + sixth);
        }
    }

    @Test
    void globalAndPerAddressCallsGoToTheirShardsLeaderAndShadowsLedElsewhereNeverRefuseACall() throws Exception
    {
        cluster.startAll();
        cluster.awaitSpreadLeaders();
        // A GLOBAL shadow of "orders": its one bucket lives on one shard, so most calls' frames reach
        // nodes that do not lead it; there it is skipped (counted), never a reason to refuse the call.
        final HttpResponse<String> shadow = AdminCalls.call(HttpClient.newHttpClient(), cluster.nodes().get("n1").adminPort(), "PUT",
            "/v1/policies/orders", "{\"selector\":{\"route\":\"/v1/orders/{id}\"},\"rate\":1000,\"burst\":1000,\"scope\":\"GLOBAL\"," +
                "\"owner\":\"test\",\"reason\":\"try one budget for all\",\"mode\":\"SHADOW\"}", TOKEN);
        assertEquals(200, shadow.statusCode(), shadow.body());
        final String endpoints = String.join(",", cluster.peers().values().stream().map(a -> "127.0.0.1:" + a.getPort()).toList());
        try (LimiterClient client = LimiterClient.builder().endpoints(endpoints).connections(1).deadline(Duration.ofSeconds(3)).build())
        {
            final Descriptor[] calls = new Descriptor[40];
            for (int i = 0; i < calls.length; i++)
            {
                calls[i] = switch (i % 4)
                {
                    case 0 -> Descriptor.of("mixed-" + i, "/v1/orders/1");
                    case 1 -> Descriptor.of("mixed-" + i, "/hot"); // GLOBAL: one bucket, one shard, whoever the tenant
                    case 2 -> Descriptor.builder().tenant("mixed-" + i).route("/ip").clientIp("10.0.0." + i).build(); // CLIENT_IP
                    default -> Descriptor.of("mixed-" + i, "/fast"); // another GLOBAL policy, maybe another shard
                };
            }
            // Until the client holds a map with the ordinals of the set it holds, some calls go astray.
            Await.until("a round of calls that no node redirects", Duration.ofSeconds(15), () ->
            {
                final long before = client.stats().redirects();
                for (final Descriptor call : calls)
                {
                    client.acquireBlocking(call, 1);
                }
                return client.stats().redirects() == before;
            });
            final long clientRedirects = client.stats().redirects();
            final long redirects = nodeRedirects();
            for (int round = 0; round < 3; round++)
            {
                for (final Descriptor call : calls)
                {
                    final Decision decision = client.acquireBlocking(call, 1);
                    assertFalse(decision.degraded(), "decided by a node: " + call + " " + decision);
                }
            }
            assertEquals(clientRedirects, client.stats().redirects(), "no call is sent back, whatever its policy's scope");
            assertEquals(redirects, nodeRedirects(), "no node bounces a frame");
        }
        final double skipped = cluster.nodes().values().stream()
            .mapToDouble(n -> n.metrics().registry().find("limiter.shadow.skipped").counter().count()).sum();
        assertTrue(skipped > 0, "shadow evaluations on shards led elsewhere are skipped and counted");
    }

    private long nodeRedirects()
    {
        return cluster.nodes().values().stream().mapToLong(n -> n.metrics().redirects()).sum();
    }
}
