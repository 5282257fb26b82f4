package dev.limiter.cli;

import dev.limiter.protocol.PolicySetIndex;
import dev.limiter.protocol.policy.Algorithm;
import dev.limiter.protocol.policy.CalendarWindow;
import dev.limiter.protocol.policy.Mode;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** envoyproxy/ratelimit configurations, written in that format, turned into policies. */
class EnvoyConfigImportTest
{
    /** A database proxy's connections per second, per database (one level, fixed values). */
    static final String MONGO = """
        domain: mongo_cps
        descriptors:
          - key: database
            value: users
            rate_limit:
              unit: second
              requests_per_unit: 500

          - key: database
            value: default
            rate_limit:
              unit: second
              requests_per_unit: 500
        """;

    /** An edge proxy: per client address, a login path, per API key and user, an admin exemption, a shadowed trial. */
    static final String EDGE = """
        domain: edge
        descriptors:
          # Every client address: 100 a minute.
          - key: remote_address
            rate_limit:
              unit: minute
              requests_per_unit: 100

          - key: path
            value: /login
            rate_limit:
              name: login-attempts
              unit: minute
              requests_per_unit: 5

          - key: api_key
            descriptors:
              - key: user
                rate_limit:
                  unit: hour
                  requests_per_unit: 1000
              - key: user
                value: admin
                rate_limit:
                  unlimited: true

          - key: plan
            value: trial
            shadow_mode: true
            rate_limit:
              unit: day
              requests_per_unit: 10000

          - key: plan
            value: enterprise
            rate_limit:
              unit: month
              requests_per_unit: 50000000
            detailed_metric: true

          - key: health_check
        """;

    /** Service to service: source and destination cluster, nested two deep, the example shape of envoyproxy/ratelimit's docs. */
    static final String MESH = """
        domain: mesh
        descriptors:
          - key: source_cluster
            value: proxy
            descriptors:
              - key: destination_cluster
                value: bar
                rate_limit:
                  unit: minute
                  requests_per_unit: 1
              - key: destination_cluster
                value: foo
                rate_limit:
                  unit: week
                  requests_per_unit: 2
          - key: source_cluster
            descriptors:
              - key: destination_cluster
                rate_limit:
                  unit: second
                  requests_per_unit: 50
        """;

    private static Map<String, Policy> byId(final EnvoyConfigImport.Result result)
    {
        assertEquals(List.of(), result.errors());
        return result.policies().stream().collect(Collectors.toMap(Policy::getId, Function.identity()));
    }

    @Test
    void eachRateLimitBecomesAFixedWindowPolicySelectingItsDescriptor()
    {
        final Map<String, Policy> mongo = byId(EnvoyConfigImport.convert(MONGO, "mongo.yaml", "db-team"));
        assertEquals(2, mongo.size());
        final Policy users = mongo.get("mongo_cps.database-users");
        assertEquals("envoy=mongo_cps:database=users", Output.selector(users.getSelector()));
        assertEquals(500, users.getRate());
        assertEquals(1, users.getPeriod().getSeconds());
        assertEquals(Algorithm.FIXED_WINDOW, users.getAlgorithm());
        assertEquals("db-team", users.getOwner());
        assertTrue(users.getReason().contains("mongo.yaml (descriptors[0].rate_limit)"), users.getReason());
        assertTrue(mongo.containsKey("mongo_cps.database-default"));
    }

    @Test
    void anyValueUnlimitedShadowMonthsAndNamesCarryOver()
    {
        final EnvoyConfigImport.Result result = EnvoyConfigImport.convert(EDGE, "edge.yaml", "edge-team");
        final Map<String, Policy> edge = byId(result);
        assertEquals(6, edge.size(), edge.keySet().toString());
        assertEquals("envoy=edge:remote_address=*", Output.selector(edge.get("edge.remote_address").getSelector()));
        assertEquals(60, edge.get("edge.remote_address").getPeriod().getSeconds());
        assertEquals(5, edge.get("login-attempts").getRate(), "rate_limit.name becomes the id");
        assertEquals("envoy=edge:api_key=*,user=*", Output.selector(edge.get("edge.api_key.user").getSelector()));
        final Policy admin = edge.get("edge.api_key.user-admin");
        assertTrue(admin.getUnlimited(), "unlimited is a policy too: the wildcard must not apply");
        assertEquals(0, admin.getRate());
        assertEquals(Mode.SHADOW, edge.get("edge.plan-trial").getMode());
        final Policy enterprise = edge.get("edge.plan-enterprise");
        assertEquals(CalendarWindow.CALENDAR_WINDOW_UNSPECIFIED, enterprise.getCalendarWindow(), "envoyproxy/ratelimit's month is 30 days");
        assertEquals(30 * 86_400, enterprise.getPeriod().getSeconds());
        assertTrue(result.notes().stream().anyMatch(n -> n.contains("detailed_metric: ignored")), result.notes().toString());
        assertTrue(result.notes().stream().anyMatch(n -> n.contains("descriptors[5] (health_check=*): no rate_limit")),
            result.notes().toString());
        // The policies select what envoyproxy/ratelimit would: admin is the unlimited one, others the per-user limit.
        final PolicySetIndex index = PolicySetIndex.compile(PolicySet.newBuilder().addAllPolicies(result.policies()).build(), null);
        assertEquals(6, index.size() - 1);
    }

    @Test
    void nestedDescriptorsSelectTheWholePathAndExactValuesOutrankAny()
    {
        final Map<String, Policy> mesh = byId(EnvoyConfigImport.convert(MESH, "mesh.yaml", "mesh-team"));
        assertEquals("envoy=mesh:source_cluster=proxy,destination_cluster=bar",
            Output.selector(mesh.get("mesh.source_cluster-proxy.destination_cluster-bar").getSelector()));
        assertEquals(7 * 86_400, mesh.get("mesh.source_cluster-proxy.destination_cluster-foo").getPeriod().getSeconds());
        assertEquals("envoy=mesh:source_cluster=*,destination_cluster=*",
            Output.selector(mesh.get("mesh.source_cluster.destination_cluster").getSelector()));
    }

    @Test
    void whatHasNoEquivalentIsAnErrorNamingTheFieldAllAtOnce()
    {
        final String bad = """
            domain: edge
            descriptors:
              - key: path
                value: /api/*
                rate_limit: { unit: second, requests_per_unit: 10 }
              - key: tier
                value: gold
                rate_limit: { unit: year, requests_per_unit: 10, quota: 1 }
              - key: tier
                value: silver
                rate_limit: { unit: fortnight, requests_per_unit: 10 }
              - key: tier
                value: bronze
                rate_limit: { unit: second }
              - key: tier
                value: tin
                rate_limit: { unit: second, request_per_unit: 10 }
              - key: a
                quota_mode: true
                rate_limit:
                  unit: second
                  requests_per_unit: 5
                  replaces: [ { name: "" } ]
              - key: l1
                descriptors:
                  - key: l2
                    descriptors:
                      - key: l3
                        descriptors:
                          - key: l4
                            descriptors:
                              - key: l5
                                descriptors:
                                  - key: l6
                                    rate_limit: { unit: second, requests_per_unit: 1 }
              - value: no-key
              - key: u
                rate_limit: { unlimited: true, unit: second, requests_per_unit: 3 }
            """;
        final EnvoyConfigImport.Result result = EnvoyConfigImport.convert(bad, "bad.yaml", "t");
        final String all = String.join("\n", result.errors());
        assertTrue(all.contains("descriptors[0].value: '/api/*' contains '*', which envoyproxy/ratelimit matches as a wildcard"), all);
        assertTrue(all.contains("descriptors[1].rate_limit.quota: unknown field"), all);
        assertTrue(all.contains("descriptors[2].rate_limit.unit: 'fortnight' is not a unit; second, minute, hour, day, week, month or year"),
            all);
        assertTrue(all.contains("descriptors[3].rate_limit.requests_per_unit: required, a whole number of at least 1"), all);
        assertTrue(all.contains("descriptors[4].rate_limit.request_per_unit: unknown field"), all);
        assertTrue(all.contains("descriptors[5].quota_mode: no equivalent"), all);
        assertTrue(all.contains("descriptors[5].rate_limit.replaces[0].name: required"), all);
        assertTrue(all.contains("descriptors[6].descriptors[0].descriptors[0].descriptors[0].descriptors[0].descriptors[0]: nested 6 deep"), all);
        assertTrue(all.contains("descriptors[7].key: required"), all);
        assertTrue(all.contains("descriptors[8].rate_limit.unit: 'second' with unlimited: true"), all);
        assertEquals(11, result.errors().size(), all);
    }

    @Test
    void aFileThatIsNotAConfigurationSaysWhatItExpected()
    {
        assertEquals(List.of("expected a mapping with 'domain' and 'descriptors' (an envoyproxy/ratelimit configuration), found a list"),
            EnvoyConfigImport.convert("- a\n- b\n", "f", "t").errors());
        assertTrue(EnvoyConfigImport.convert("domain: [unclosed\n", "f", "t").errors().get(0).startsWith("not YAML: "));
        assertEquals(List.of("domain: required, a non-empty string (the rate limit filter's domain)",
                "descriptors: required, a list (each with a key, and a rate_limit or nested descriptors)"),
            EnvoyConfigImport.convert("other: 1\n", "f", "t").errors().subList(1, 3));
        assertTrue(EnvoyConfigImport.convert("domain: d\ndomain: e\ndescriptors: []\n", "f", "t").errors().get(0).startsWith("not YAML: "),
            "a duplicate key is refused, not the last one silently kept");
        // Two rate limits on the same descriptor path conflict, as the policies they would make do.
        final EnvoyConfigImport.Result twins = EnvoyConfigImport.convert("""
            domain: d
            descriptors:
              - { key: k, rate_limit: { unit: second, requests_per_unit: 1 } }
              - { key: k, rate_limit: { unit: second, requests_per_unit: 2 } }
            """, "twins.yaml", "t");
        assertTrue(twins.errors().get(0).contains("conflicts with policy 'd.k'") && twins.errors().get(0).contains("twins.yaml"),
            twins.errors().toString());
    }
}
