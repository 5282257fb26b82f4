package dev.limiter.client;

import dev.limiter.protocol.ShardMap;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.protocol.policy.Scope;
import dev.limiter.protocol.policy.Selector;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Where the SDK sends a call when the cluster runs several Raft groups. A descriptor used again
 * keeps its shard under the routing it was placed by, so these check that a kept placement is the
 * one a fresh descriptor gets, and that it is dropped whenever the shard could change.
 */
class ShardRouterTest
{
    private static final String[] LEADERS = {"127.0.0.1:7401", "127.0.0.1:7402", "127.0.0.1:7403"};

    /** Orders by tenant, search GLOBAL (one key, or split across shards), login per client address. */
    private static PolicySet policies(final long version, final Scope search, final boolean splitSearch)
    {
        return PolicySet.newBuilder().setVersion(version)
            .setDefaultPolicy(Policy.newBuilder().setId("baseline").setRate(100).setOwner("infra"))
            .addPolicies(Policy.newBuilder().setId("orders").setSelector(Selector.newBuilder().setRoute("/v1/orders/{id}"))
                .setRate(100).setOwner("team"))
            .addPolicies(Policy.newBuilder().setId("search").setSelector(Selector.newBuilder().setRoute("/v1/search"))
                .setScope(search).setSplitAcrossShards(splitSearch).setRate(1000).setOwner("team"))
            .addPolicies(Policy.newBuilder().setId("login").setSelector(Selector.newBuilder().setRoute("/login"))
                .setScope(Scope.CLIENT_IP).setRate(5).setOwner("team"))
            .build();
    }

    private static ShardMap map(final int shards, final long version, final String... leaders)
    {
        final int[] groupOfShard = new int[shards];
        for (int s = 0; s < shards; s++)
        {
            groupOfShard[s] = s % leaders.length;
        }
        final Map<String, Integer> ordinals = new LinkedHashMap<>();
        for (final String id : new String[] {"baseline", "orders", "search", "login"})
        {
            ordinals.put(id, ordinals.size());
        }
        return new ShardMap(groupOfShard, leaders, version, ordinals);
    }

    private static ShardRouter router(final PolicyCache cache, final ShardMap map)
    {
        final ShardRouter router = new ShardRouter(cache, lane -> false);
        router.mapReceived(map);
        assertTrue(router.routes());
        return router;
    }

    private static PolicyCache cache(final PolicySet set)
    {
        final PolicyCache cache = new PolicyCache(Duration.ofDays(1), System::nanoTime);
        cache.received(set.getVersion(), set.toByteArray());
        return cache;
    }

    private static Descriptor[] calls(final int i)
    {
        return new Descriptor[] {
            Descriptor.of("tenant-" + i, "/v1/orders/" + i),
            Descriptor.of("tenant-" + i, "/v1/search"),
            Descriptor.builder().tenant("tenant-" + i).route("/login").clientIp("10.1." + (i >> 8 & 255) + "." + (i & 255)).build(),
            Descriptor.of("tenant-" + i, "/elsewhere"),
        };
    }

    /** A copy the router has never seen, so nothing is kept for it. */
    private static Descriptor copy(final Descriptor d)
    {
        return Descriptor.builder().tenant(d.tenant()).route(d.route()).clientIp(d.clientIp()).build();
    }

    @Test
    void aDescriptorUsedAgainGoesWhereAFreshOneGoes()
    {
        final ShardRouter router = router(cache(policies(7, Scope.GLOBAL, false)), map(12, 7, LEADERS));
        final Set<Integer> shards = new HashSet<>();
        for (int i = 0; i < 300; i++)
        {
            for (final Descriptor d : calls(i))
            {
                final int first = router.shardFor(d);
                assertEquals(first, router.shardFor(d), d.toString());
                assertEquals(router.shardFor(copy(d)), router.shardFor(d), d.toString());
                shards.add(first);
            }
            assertEquals(ShardMap.shardOf(calls(i)[0].tenantHash(), 12), router.shardFor(calls(i)[0]), "a tenant-scoped call goes to its tenant's shard");
        }
        assertEquals(12, shards.size(), "calls spread over every shard: " + shards);
    }

    @Test
    void aNewPolicySetOrAnotherNumberOfShardsPlacesAKeptDescriptorAnew()
    {
        final PolicyCache cache = cache(policies(7, Scope.GLOBAL, false));
        final ShardRouter router = router(cache, map(12, 7, LEADERS));
        final Descriptor[] searches = new Descriptor[64];
        final Set<Integer> shards = new HashSet<>();
        for (int i = 0; i < searches.length; i++)
        {
            searches[i] = Descriptor.of("tenant-" + i, "/v1/search");
            shards.add(router.shardFor(searches[i])); // kept: one GLOBAL key, one shard for every tenant
        }
        assertEquals(1, shards.size(), shards.toString());
        // Version 8 makes search tenant-scoped: each call now goes to its tenant's shard.
        cache.received(8, policies(8, Scope.TENANT, false).toByteArray());
        router.policiesChanged();
        router.mapReceived(map(12, 8, LEADERS));
        shards.clear();
        for (final Descriptor d : searches)
        {
            assertEquals(ShardMap.shardOf(d.tenantHash(), 12), router.shardFor(d), d.toString());
            shards.add(router.shardFor(d));
        }
        assertTrue(shards.size() > 1, shards.toString());
        // Six shards instead of twelve, same set.
        router.mapReceived(map(6, 8, LEADERS));
        for (final Descriptor d : searches)
        {
            assertEquals(ShardMap.shardOf(d.tenantHash(), 6), router.shardFor(d), d.toString());
        }
    }

    @Test
    void leadersMovingKeepThePlacementAndTheCallGoesToTheNewLeader()
    {
        final ShardRouter router = router(cache(policies(7, Scope.GLOBAL, false)), map(12, 7, LEADERS));
        final Descriptor d = Descriptor.of("tenant-5", "/v1/orders/5");
        final int shard = router.shardFor(d);
        final String before = router.leaderFor(d);
        router.mapReceived(map(12, 7, LEADERS[1], LEADERS[2], LEADERS[0]));
        assertEquals(shard, router.shardFor(d));
        assertNotEquals(before, router.leaderFor(d));
        assertEquals(router.leaderFor(copy(d)), router.leaderFor(d));
    }

    @Test
    void aGlobalCallSplitAcrossShardsDrawsItsShardForEachCall()
    {
        final ShardRouter router = router(cache(policies(7, Scope.GLOBAL, true)), map(12, 7, LEADERS));
        final Descriptor d = Descriptor.of("tenant-1", "/v1/search");
        final Set<Integer> shards = new HashSet<>();
        for (int i = 0; i < 500; i++)
        {
            shards.add(router.shardFor(d));
        }
        assertTrue(shards.size() > 6, "a kept descriptor still spreads: " + shards);
    }

    @Test
    void twoClientsSharingADescriptorEachPlaceItByTheirOwnRouting()
    {
        final PolicySet set = policies(7, Scope.GLOBAL, false);
        final ShardRouter twelve = router(cache(set), map(12, 7, LEADERS));
        final ShardRouter five = router(cache(set), map(5, 7, LEADERS));
        for (int i = 0; i < 100; i++)
        {
            final Descriptor d = Descriptor.of("tenant-" + i, "/v1/orders/" + i);
            for (int round = 0; round < 3; round++)
            {
                assertEquals(ShardMap.shardOf(d.tenantHash(), 12), twelve.shardFor(d));
                assertEquals(ShardMap.shardOf(d.tenantHash(), 5), five.shardFor(d));
            }
        }
    }
}
