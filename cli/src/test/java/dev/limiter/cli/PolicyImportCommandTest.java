package dev.limiter.cli;

import com.google.protobuf.util.JsonFormat;
import dev.limiter.protocol.policy.Consistency;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicySet;
import dev.limiter.server.ServerConfig;
import dev.limiter.server.StoreServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code ./limiter policy import --envoy} against a real node's admin API. */
@Timeout(60)
class PolicyImportCommandTest
{
    private static final String TOKEN = PolicyCommandTest.TOKEN;

    @TempDir
    Path dir;

    private StoreServer node;
    private String admin;

    @BeforeEach
    void start() throws Exception
    {
        node = new StoreServer(new ServerConfig().host("127.0.0.1").port(0).adminPort(0).shards(1).ioThreads(1)
            .policiesFile(Path.of("..", "config", "policies.json")).dataDir(dir.resolve("data")).adminToken(TOKEN)).start();
        admin = "127.0.0.1:" + node.adminPort();
        Files.writeString(dir.resolve("edge.yaml"), EnvoyConfigImportTest.EDGE);
        Files.writeString(dir.resolve("mesh.yaml"), EnvoyConfigImportTest.MESH);
    }

    @AfterEach
    void stop()
    {
        node.close();
    }

    private PolicyCommandTest.Result policy(final String... args)
    {
        return CommandRun.capture(PolicyCommand::run, args, Map.of(AdminClient.TOKEN_ENVIRONMENT, TOKEN), dir);
    }

    private PolicySet policies() throws Exception
    {
        final PolicyCommandTest.Result list = policy("list", "--admin", admin, "--json");
        assertEquals(0, list.status(), list.toString());
        final PolicySet.Builder set = PolicySet.newBuilder();
        JsonFormat.parser().ignoringUnknownFields().merge(list.out(), set);
        return set.build();
    }

    @Test
    void aDryRunShowsWhatWouldChangeAndChangesNothingThenApplyMakesItAndASecondRunFindsNothingToDo() throws Exception
    {
        final int before = policies().getPoliciesCount();
        final PolicyCommandTest.Result dry = policy("import", "--envoy", "edge.yaml", "--envoy", "mesh.yaml", "--owner", "edge-team",
            "--admin", admin);
        assertEquals(0, dry.status(), dry.toString());
        assertTrue(dry.out().matches("(?s).*create +login-attempts +envoy=edge:path=/login +5/1m, ENFORCE.*"), dry.out());
        // The sample set's own policy for these descriptors is updated, whatever its id.
        assertTrue(dry.out().matches("(?s).*update +edge-per-ip +envoy=edge:remote_address=\\* +algorithm TOKEN_BUCKET -> FIXED_WINDOW\n.*"),
            dry.out());
        assertTrue(dry.out().contains("dry run: nothing changed; --apply makes these 9 changes"), dry.out());
        assertTrue(dry.err().contains("note: edge.yaml: descriptors[5] (health_check=*): no rate_limit"), dry.err());
        assertEquals(before, policies().getPoliciesCount());

        final PolicyCommandTest.Result applied = policy("import", "--envoy", "edge.yaml", "--envoy", "mesh.yaml", "--owner", "edge-team",
            "--admin", admin, "--apply", "--reason", "move the edge limits off Redis");
        assertEquals(0, applied.status(), applied.toString());
        assertTrue(applied.out().contains("policy login-attempts version 1 in force"), applied.out());
        assertTrue(applied.out().endsWith("9 policies changed\n"), applied.out());
        final PolicySet after = policies();
        assertEquals(before + 8, after.getPoliciesCount());
        assertTrue(after.getPoliciesList().stream().anyMatch(p -> p.getId().equals("edge.api_key.user-admin") && p.getUnlimited()));
        final Policy login = after.getPoliciesList().stream().filter(p -> p.getId().equals("login-attempts")).findFirst().orElseThrow();
        assertEquals("move the edge limits off Redis", login.getReason());

        final PolicyCommandTest.Result again = policy("import", "--envoy", "edge.yaml", "--envoy", "mesh.yaml", "--owner", "edge-team",
            "--admin", admin);
        assertTrue(again.out().contains("dry run: nothing changed; the cluster already has these policies"), again.out());
        assertFalse(again.out().contains("create"), again.out());
    }

    @Test
    void anUpdateSaysWhatChangesAndKeepsWhatTheFileCannotSay() throws Exception
    {
        assertEquals(0, policy("import", "--envoy", "mesh.yaml", "--owner", "mesh-team", "--admin", admin, "--apply",
            "--reason", "first import").status());
        // An operator makes one of them STRICT since.
        final Path strict = Files.writeString(dir.resolve("strict.json"),
            "{\"id\":\"mesh.source_cluster.destination_cluster\",\"selector\":{\"envoy\":{\"domain\":\"mesh\",\"entries\":" +
                "[{\"key\":\"source_cluster\"},{\"key\":\"destination_cluster\"}]}},\"rate\":50,\"algorithm\":\"FIXED_WINDOW\"," +
                "\"consistency\":\"STRICT\",\"owner\":\"mesh-team\"}");
        assertEquals(0, policy("put", "--file", strict.getFileName().toString(), "--reason", "exact", "--admin", admin).status());
        Files.writeString(dir.resolve("mesh.yaml"), EnvoyConfigImportTest.MESH.replace("requests_per_unit: 50", "requests_per_unit: 80"));

        final PolicyCommandTest.Result dry = policy("import", "--envoy", "mesh.yaml", "--owner", "mesh-team", "--admin", admin);
        assertTrue(dry.out().matches("(?s).*update +mesh\\.source_cluster\\.destination_cluster +\\S+ +rate 50/1s -> 80/1s, burst 50 -> 80.*"),
            dry.out());
        assertTrue(dry.out().matches("(?s).*same +mesh\\.source_cluster-proxy\\.destination_cluster-bar.*"), dry.out());
        assertTrue(dry.out().contains("dry run: nothing changed; --apply makes this change"), dry.out());

        assertEquals(0, policy("import", "--envoy", "mesh.yaml", "--owner", "mesh-team", "--admin", admin, "--apply",
            "--reason", "more for the mesh").status());
        final Policy updated = policies().getPoliciesList().stream()
            .filter(p -> p.getId().equals("mesh.source_cluster.destination_cluster")).findFirst().orElseThrow();
        assertEquals(80, updated.getRate());
        assertEquals(Consistency.STRICT, updated.getConsistency(), "what the file cannot say stays as the operator set it");
        assertEquals(3, updated.getVersion(), "v1 imported, v2 made STRICT, v3 this import");

        // A descriptor left out of the file is named, and stays.
        Files.writeString(dir.resolve("mesh.yaml"), EnvoyConfigImportTest.MESH.substring(0, EnvoyConfigImportTest.MESH.indexOf("  - key: source_cluster\n    descriptors:")));
        final PolicyCommandTest.Result fewer = policy("import", "--envoy", "mesh.yaml", "--owner", "mesh-team", "--admin", admin);
        assertTrue(fewer.out().matches("(?s).*keep +mesh\\.source_cluster\\.destination_cluster +\\S+ +not in the files: stays.*"), fewer.out());
    }

    @Test
    void aConfigurationWithProblemsIsRefusedFieldByFieldAndNothingIsSent() throws Exception
    {
        Files.writeString(dir.resolve("bad.yaml"), "domain: edge\ndescriptors:\n  - key: path\n    value: /api/*\n" +
            "    rate_limit: { unit: year, requests_per_unit: 1 }\n  - key: x\n    rate_limit: { unit: second }\n");
        final int before = policies().getPoliciesCount();
        final PolicyCommandTest.Result bad = policy("import", "--envoy", "bad.yaml", "--owner", "t", "--admin", admin, "--apply",
            "--reason", "r");
        assertEquals(2, bad.status(), bad.toString());
        assertEquals("", bad.out());
        assertTrue(bad.err().contains("limiter policy import: bad.yaml: descriptors[0].value: '/api/*' contains '*'"), bad.err());
        assertTrue(bad.err().contains("bad.yaml: descriptors[1].rate_limit.requests_per_unit: required"), bad.err());
        assertTrue(bad.err().contains("limiter policy: 2 problems in the configuration; nothing was sent"), bad.err());
        assertEquals(before, policies().getPoliciesCount());

        final PolicyCommandTest.Result missing = policy("import", "--envoy", "nope.yaml", "--owner", "t", "--admin", admin);
        PolicyCommandTest.assertOneLineFailure(missing, "limiter policy: cannot read nope.yaml: no such file");
        final PolicyCommandTest.Result both = policy("import", "--envoy", "edge.yaml", "--owner", "t", "--apply", "--print");
        PolicyCommandTest.assertOneLineFailure(both, "limiter policy: --apply and --print: choose one");
    }

    @Test
    void anUnlimitedDescriptorIsPlannedAsAnUnlimitedPolicy() throws Exception
    {
        final PolicyCommandTest.Result dry = policy("import", "--envoy", "edge.yaml", "--owner", "edge-team", "--admin", admin);
        assertEquals(0, dry.status(), dry.toString());
        assertTrue(dry.out().matches("(?s).*create +edge\\.api_key\\.user-admin +envoy=edge:api_key=\\*,user=admin +unlimited, ENFORCE\n.*"),
            dry.out());
        final PolicyCommandTest.Result printed = policy("import", "--envoy", "edge.yaml", "--owner", "edge-team", "--print");
        final PolicySet.Builder set = PolicySet.newBuilder();
        JsonFormat.parser().merge(printed.out(), set);
        final Policy free = set.getPoliciesList().stream().filter(p -> p.getId().equals("edge.api_key.user-admin")).findFirst().orElseThrow();
        assertTrue(free.getUnlimited());
        assertEquals(0, free.getRate());
    }

    @Test
    void replacesNamesBecomeTheIdsThePoliciesAreStoredUnderAndANameOfNothingIsANote() throws Exception
    {
        // A policy of the cluster's, in the same domain, that no file makes.
        final Path search = Files.writeString(dir.resolve("search.json"),
            "{\"id\":\"edge-search\",\"selector\":{\"envoy\":{\"domain\":\"edge\",\"entries\":[{\"key\":\"path\",\"value\":\"/search\"}]}}," +
                "\"rate\":20,\"owner\":\"edge-team\"}");
        assertEquals(0, policy("put", "--file", search.getFileName().toString(), "--reason", "search", "--admin", admin).status());
        Files.writeString(dir.resolve("hot.yaml"), """
            domain: edge
            descriptors:
              - key: remote_address
                rate_limit: { name: per-ip, unit: minute, requests_per_unit: 100 }
              - key: path
                value: /hot
                rate_limit:
                  name: hot
                  unit: minute
                  requests_per_unit: 1000
                  replaces: [ { name: per-ip }, { name: edge-search }, { name: bench-envoy }, { name: nowhere } ]
            """);
        final PolicyCommandTest.Result dry = policy("import", "--envoy", "hot.yaml", "--owner", "edge-team", "--admin", admin);
        assertEquals(0, dry.status(), dry.toString());
        // per-ip updates the sample set's edge-per-ip (same descriptors): replaces names it by the id it keeps.
        assertTrue(dry.out().matches("(?s).*create +hot +envoy=edge:path=/hot +1000/1m, ENFORCE, replaces edge-per-ip, edge-search\n.*"),
            dry.out());
        assertTrue(dry.err().contains("note: hot.yaml: descriptors[1].rate_limit.replaces[2].name: 'bench-envoy' replaces nothing: no " +
            "rate_limit of domain 'edge' in the files is named so, and the cluster has no envoy policy 'bench-envoy' of that domain"),
            dry.err());
        assertTrue(dry.err().contains("hot.yaml: descriptors[1].rate_limit.replaces[3].name: 'nowhere' replaces nothing"), dry.err());

        assertEquals(0, policy("import", "--envoy", "hot.yaml", "--owner", "edge-team", "--admin", admin, "--apply", "--reason", "hot").status());
        final Policy hot = policies().getPoliciesList().stream().filter(p -> p.getId().equals("hot")).findFirst().orElseThrow();
        assertEquals(List.of("edge-per-ip", "edge-search"), hot.getReplacesList());

        // Without the cluster (--print), only the files' names are known.
        final PolicyCommandTest.Result printed = policy("import", "--envoy", "hot.yaml", "--owner", "edge-team", "--print");
        assertEquals(0, printed.status(), printed.toString());
        assertTrue(printed.out().contains("\"replaces\": [\"per-ip\"]"), printed.out());
        assertTrue(printed.err().contains("'edge-search' replaces nothing: no rate_limit of domain 'edge' in the files is named so, and " +
            "--print asks no node"), printed.err());
    }

    @Test
    void printWritesThePoliciesAsAPolicySetWithoutAskingANode() throws Exception
    {
        node.close();
        final PolicyCommandTest.Result printed = policy("import", "--envoy", "mesh.yaml", "--owner", "mesh-team", "--print",
            "--admin", admin);
        assertEquals(0, printed.status(), printed.toString());
        final PolicySet.Builder set = PolicySet.newBuilder();
        JsonFormat.parser().merge(printed.out(), set);
        assertEquals(3, set.getPoliciesCount());
        node = new StoreServer(new ServerConfig().host("127.0.0.1").port(0).adminPort(-1).shards(1).ioThreads(1)
            .policiesFile(Files.writeString(dir.resolve("printed.json"), printed.out())).dataDir(dir.resolve("data2"))).start();
        assertEquals(4, node.policies().size(), "a node starts on the printed set (three and the default)");
    }
}
