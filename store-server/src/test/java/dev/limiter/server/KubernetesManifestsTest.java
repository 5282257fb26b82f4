package dev.limiter.server;

import dev.limiter.protocol.PolicySetIndex;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * deploy/k8s as Kubernetes would run it: every member's arguments, environment and mounted settings
 * file go through the node's own loader ({@link ServerMain#load}), and the ports, probes, DNS names
 * and disruption budget agree with what the node then serves.
 */
class KubernetesManifestsTest
{
    private static final Path MANIFESTS = Path.of("..", "deploy", "k8s");

    @TempDir
    Path dir;

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(final Object o)
    {
        return (Map<String, Object>)o;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> list(final Object o)
    {
        return (List<Object>)o;
    }

    private static Object at(final Object root, final String... path)
    {
        Object o = root;
        for (final String step : path)
        {
            o = map(o).get(step);
            assertNotNull(o, "no " + String.join(".", path));
        }
        return o;
    }

    /** Every document of every manifest, by kind and name. */
    private static Map<String, Map<String, Object>> documents() throws IOException
    {
        final Map<String, Map<String, Object>> byKindAndName = new LinkedHashMap<>();
        final List<Path> files;
        try (Stream<Path> all = Files.list(MANIFESTS))
        {
            files = all.filter(p -> p.toString().endsWith(".yaml")
                && !p.endsWith("kustomization.yaml")).sorted().toList();
        }
        for (final Path file : files)
        {
            for (final Object doc : new Yaml(new SafeConstructor(new LoaderOptions())).loadAll(Files.readString(file)))
            {
                final Map<String, Object> d = map(doc);
                byKindAndName.put(d.get("kind") + "/" + at(d, "metadata", "name"), d);
            }
        }
        return byKindAndName;
    }

    @Test
    void everyMembersArgumentsEnvironmentAndSettingsFileParseWithTheNodesLoaderAndAgreeWithTheService()
        throws IOException
    {
        final Map<String, Map<String, Object>> docs = documents();
        final Map<String, Object> set = docs.get("StatefulSet/limiter");
        final Map<String, Object> headless = docs.get("Service/limiter");
        final Map<String, Object> config = docs.get("ConfigMap/limiter-config");
        final Map<String, Object> tokens = docs.get("Secret/limiter-tokens");
        final Map<String, Object> budget = docs.get("PodDisruptionBudget/limiter");
        assertTrue(set != null && headless != null && config != null && tokens != null && budget != null,
            docs.keySet().toString());
        assertEquals("None", at(headless, "spec", "clusterIP"));
        assertEquals(at(headless, "metadata", "name"), at(set, "spec", "serviceName"));
        final int replicas = (Integer)at(set, "spec", "replicas");
        assertTrue((Integer)at(budget, "spec", "maxUnavailable") <= (replicas - 1) / 2, "a majority stays up");
        assertEquals(at(set, "spec", "template", "metadata", "labels"), at(budget, "spec", "selector", "matchLabels"));

        // The ConfigMap as mounted: its keys are files of the mount path; paths of the pod are moved under dir.
        final Map<String, Object> container = map(list(at(set, "spec", "template", "spec", "containers")).get(0));
        final String configMount = mountPath(container, "config");
        final String dataMount = mountPath(container, "data");
        final Path mounted = Files.createDirectories(dir.resolve("config"));
        for (final Map.Entry<String, Object> file : map(at(config, "data")).entrySet())
        {
            Files.writeString(mounted.resolve(file.getKey()), inPod(file.getValue().toString(), configMount,
                dataMount));
        }
        PolicySetIndex.fromJson(Files.readString(mounted.resolve("policies.json"))); // the node's own policy check

        final Map<String, Integer> ports = new HashMap<>();
        list(container.get("ports")).forEach(p -> ports.put((String)map(p).get("name"),
            (Integer)map(p).get("containerPort")));
        for (int i = 0; i < replicas; i++)
        {
            final String pod = at(set, "metadata", "name") + "-" + i;
            final List<String> args = new ArrayList<>();
            list(container.get("args")).forEach(a -> args.add(inPod(a.toString(), configMount, dataMount)));
            final Map<String, String> env = environment(container, pod, map(at(tokens, "stringData")));
            final NodeConfig node = ServerMain.load(args.toArray(String[]::new), env);
            assertTrue(SettingSources.of(args.toArray(String[]::new), env)
                .checkNames(new picocli.CommandLine(new ServerMain()).getCommandSpec()).isEmpty(),
                    env.keySet().toString());

            assertEquals(pod, node.cluster().nodeId(), "the node id is the pod's name");
            assertEquals(replicas, node.cluster().peers().size());
            for (int j = 0; j < replicas; j++)
            {
                final String member = at(set, "metadata", "name") + "-" + j;
                final InetSocketAddress address = node.cluster().peers().get(member);
                assertEquals(member + "." + at(headless, "metadata", "name"), address.getHostString(),
                    "members are named by their stable DNS names");
                assertEquals(ports.get("data"), address.getPort());
            }
            assertEquals("0.0.0.0", node.dataPort().host(), "reachable from other pods");
            assertEquals(ports.get("data"), node.dataPort().port());
            assertEquals(ports.get("admin"), node.admin().port());
            assertEquals(ports.get("raft"), node.dataPort().port() + node.cluster().raftPortOffset());
            assertEquals(dir.resolve("data").toString(), node.storage().dataDir().toString(), "the data volume");
            assertEquals(mounted.resolve("policies.json"), node.storage().policiesFile());
            assertEquals("a-test-token-of-24-chars", node.admin().token(),
                "the Secret's token through LIMITER_ADMIN_TOKEN");
        }
        assertEquals("/health/ready", at(container, "readinessProbe", "httpGet", "path"));
        assertEquals("admin", at(container, "readinessProbe", "httpGet", "port"));
        assertEquals("/health/live", at(container, "livenessProbe", "httpGet", "path"));
        assertEquals("admin", at(container, "livenessProbe", "httpGet", "port"));
        final List<Object> servicePorts = list(at(headless, "spec", "ports"));
        for (final String name : List.of("data", "admin", "raft"))
        {
            assertTrue(servicePorts.stream().anyMatch(p -> name.equals(map(p).get("name")) &&
                ports.get(name).equals(map(p).get("port"))), "the Service serves the " + name + " port");
        }
    }

    private static String mountPath(final Map<String, Object> container, final String volume)
    {
        return list(container.get("volumeMounts")).stream().map(KubernetesManifestsTest::map)
            .filter(m -> volume.equals(m.get("name"))).findFirst().orElseThrow().get("mountPath").toString();
    }

    /** A path of the pod, as this test lays it out under dir. */
    private String inPod(final String text, final String configMount, final String dataMount)
    {
        return text.replace(configMount, dir.resolve("config").toString()).replace(dataMount,
            dir.resolve("data").toString());
    }

    /**
     * The container's environment in pod {@code pod}: plain values with $(VAR) expanded, the pod's name
     * from the downward API, Secret keys (an empty one, which the manifest leaves to be made, as a test token).
     */
    private static Map<String, String> environment(final Map<String, Object> container, final String pod,
        final Map<String, Object> secret)
    {
        final Map<String, String> env = new LinkedHashMap<>();
        for (final Object o : list(container.get("env")))
        {
            final Map<String, Object> variable = map(o);
            final String name = variable.get("name").toString();
            if (variable.containsKey("value"))
            {
                String value = variable.get("value").toString();
                for (final Map.Entry<String, String> earlier : env.entrySet())
                {
                    value = value.replace("$(" + earlier.getKey() + ")", earlier.getValue());
                }
                env.put(name, value);
            }
            else if (map(at(variable, "valueFrom")).containsKey("fieldRef"))
            {
                assertEquals("metadata.name", at(variable, "valueFrom", "fieldRef", "fieldPath"));
                env.put(name, pod);
            }
            else
            {
                final String key = at(variable, "valueFrom", "secretKeyRef", "key").toString();
                final String value = secret.get(key).toString();
                env.put(name, value.isEmpty() ? "a-test-token-of-24-chars" : value);
            }
        }
        return env;
    }
}
