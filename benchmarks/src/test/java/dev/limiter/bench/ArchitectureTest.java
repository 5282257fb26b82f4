package dev.limiter.bench;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.core.importer.Location;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.EvaluationResult;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The structure of docs/design.md, checked on the compiled main classes of every module (this
 * module sees them all): no package cycle anywhere, and who may import whom between modules.
 */
class ArchitectureTest
{
    /**
     * Main classes only: test classes and test jars may reach across (a test drives a real node).
     * The shaded SDK artifact (limiter-client) is left out: its own classes are client-sdk's and
     * wire-protocol's, checked where they are built, and the rest is third-party code relocated.
     */
    private static final ImportOption MAIN_CLASSES_ONLY = (final Location location) ->
        !location.contains("/test-classes/") && !location.contains("-tests.jar") && !location.contains("limiter-client");

    private static JavaClasses main;

    @BeforeAll
    static void importMainClasses()
    {
        main = new ClassFileImporter().withImportOption(MAIN_CLASSES_ONLY).importPackages("dev.limiter");
    }

    /** Every package of the project is a slice; generated protobuf classes sit in their own packages. */
    private static final ArchRule NO_PACKAGE_CYCLES = slices().matching("dev.limiter.(**)").should().beFreeOfCycles();

    @Test
    void thereIsNoPackageCycle()
    {
        assertTrue(main.contain("dev.limiter.server.StoreServer") && main.contain("dev.limiter.client.LimiterClient") &&
            main.contain("dev.limiter.raft.RaftNode") && main.contain("dev.limiter.cli.StatusCommand"),
            "every module's main classes were found");
        NO_PACKAGE_CYCLES.check(main);
    }

    @Test
    void theCycleCheckFindsACycleMadeOnPurpose()
    {
        final JavaClasses fixture = new ClassFileImporter().importPackages("dev.limiter.bench.cyclefixture");
        final EvaluationResult result = NO_PACKAGE_CYCLES.evaluate(fixture);
        assertTrue(result.hasViolation(), "the two fixture packages import each other");
        assertTrue(result.getFailureReport().toString().contains("cyclefixture"), result.getFailureReport().toString());
        assertFalse(NO_PACKAGE_CYCLES.evaluate(main).hasViolation());
    }

    @Test
    void nothingImportsTheStoreServerButTheBenchmarksAndTools()
    {
        noClasses().that().resideOutsideOfPackages("dev.limiter.server..", "dev.limiter.bench..")
            .should().dependOnClassesThat().resideInAPackage("dev.limiter.server..")
            .because("store-server is one node, not a library (docs/design.md, modules)").check(main);
    }

    @Test
    void theOperatorCommandsTalkToNodesOnlyOverTheirPorts()
    {
        noClasses().that().resideInAPackage("dev.limiter.cli..")
            .should().dependOnClassesThat().resideInAnyPackage("dev.limiter.server..", "dev.limiter.raft..", "org.apache.ratis..",
                "dev.limiter.bench..")
            .because("the CLI is a client of the cluster, like any service").check(main);
    }

    @Test
    void theSdkNeverSeesRatisOrTheServer()
    {
        noClasses().that().resideInAPackage("dev.limiter.client..")
            .should().dependOnClassesThat().resideInAnyPackage("org.apache.ratis..", "dev.limiter.raft..", "dev.limiter.server..")
            .because("services embed the SDK; replication is the cluster's business").check(main);
    }

    @Test
    void theServletFilterIsAnSdkClientOnly()
    {
        noClasses().that().resideInAPackage("dev.limiter.servlet..")
            .should().dependOnClassesThat().resideInAnyPackage("org.apache.ratis..", "dev.limiter.raft..", "dev.limiter.server..",
                "io.netty..")
            .because("the filter is embedded in services, through the SDK's public API").check(main);
        assertFalse(main.stream().noneMatch(c -> c.getPackageName().equals("dev.limiter.servlet")), "the filter's classes are checked");
    }

    @Test
    void theEnvoyGatewayIsAnSdkClientOnly()
    {
        noClasses().that().resideInAPackage("dev.limiter.envoy..")
            .should().dependOnClassesThat().resideInAnyPackage("org.apache.ratis..", "dev.limiter.raft..", "dev.limiter.server..")
            .because("the gateway is stateless: the SDK routes each descriptor to its shard's leader").check(main);
        assertFalse(main.stream().noneMatch(c -> c.getPackageName().equals("dev.limiter.envoy")), "the gateway's classes are checked");
    }

    @Test
    void raftKnowsNoBucketsNettyOrTheClientProtocol()
    {
        noClasses().that().resideInAPackage("dev.limiter.raft..")
            .should().dependOnClassesThat().resideInAnyPackage("io.netty..", "dev.limiter.protocol..", "dev.limiter.client..",
                "dev.limiter.server..")
            .because("raft turns commands into committed, stamped entries and nothing else").check(main);
    }

    @Test
    void theWireProtocolHoldsFormatsOnly()
    {
        noClasses().that().resideInAPackage("dev.limiter.protocol..")
            .should().dependOnClassesThat().resideInAnyPackage("dev.limiter.client..", "dev.limiter.server..", "dev.limiter.raft..",
                "dev.limiter.bench..", "dev.limiter.cli..", "org.apache.ratis..")
            .because("both ends share it; it holds no server or client logic").check(main);
    }

    @Test
    void theStoreServersPackagesAreLayeredAsItsPackageInfoSays()
    {
        layeredArchitecture().consideringOnlyDependenciesInLayers()
            .layer("node").definedBy("dev.limiter.server")
            .layer("region").definedBy("dev.limiter.server.region..")
            .layer("admin").definedBy("dev.limiter.server.admin..")
            .layer("net").definedBy("dev.limiter.server.net..")
            .layer("engine").definedBy("dev.limiter.server.engine..")
            .layer("metrics").definedBy("dev.limiter.server.metrics..")
            .layer("cluster").definedBy("dev.limiter.server.cluster..")
            .layer("control").definedBy("dev.limiter.server.control..")
            .layer("table").definedBy("dev.limiter.server.table..")
            .whereLayer("node").mayNotBeAccessedByAnyLayer()
            .whereLayer("region").mayOnlyBeAccessedByLayers("node")
            .whereLayer("admin").mayOnlyBeAccessedByLayers("node", "region")
            .whereLayer("net").mayOnlyBeAccessedByLayers("node", "admin")
            .whereLayer("engine").mayOnlyBeAccessedByLayers("node", "region", "net")
            .whereLayer("metrics").mayOnlyBeAccessedByLayers("node", "admin", "net", "engine")
            .whereLayer("cluster").mayOnlyBeAccessedByLayers("node", "admin", "net", "engine", "metrics")
            .whereLayer("control").mayOnlyBeAccessedByLayers("node", "region", "admin", "net", "engine", "metrics", "cluster")
            .whereLayer("table").mayOnlyBeAccessedByLayers("node", "admin", "net", "engine", "metrics", "cluster")
            .because("each package depends only on those below it (dev.limiter.server's package-info)").check(main);
    }
}
