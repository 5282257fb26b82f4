package dev.limiter.server;

import dev.limiter.protocol.PolicyValidationException;
import dev.limiter.protocol.policy.PolicyCommand;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The policy file a node starts from: read, checked against its shards, and made its bootstrap command. */
class PolicySeedTest
{
    private static final String STACKED = "{\"version\":7,\"policies\":[{\"id\":\"total\"," +
        "\"selector\":{\"route\":\"/x\"},\"rate\":100,\"burst\":%d,\"scope\":\"GLOBAL\",\"stacked\":true," +
        "\"owner\":\"o\"}]}";

    @TempDir
    Path dir;

    @Test
    void withoutAFileTheBootstrapHoldsTheDefaultBaselineAlone()
    {
        final PolicyCommand command = PolicySeed.read(new StorageConfig(dir, null), 4).command("n1");
        assertTrue(command.hasBootstrap(), command.toString());
        assertEquals(0, command.getBootstrap().getPoliciesCount());
        assertTrue(command.getBootstrap().hasDefaultPolicy());
        assertEquals("n1", command.getActor(), "the node bootstraps its own log");
    }

    @Test
    void theBootstrapHoldsTheFilesPoliciesAndVersionWithTheDefaultApart() throws Exception
    {
        final Path file = Files.writeString(dir.resolve("p.json"), String.format(STACKED, 4));
        final PolicyCommand command = PolicySeed.read(new StorageConfig(dir, file), 4).command("n1");
        assertEquals(7, command.getBootstrap().getVersion());
        assertEquals(1, command.getBootstrap().getPoliciesCount());
        assertEquals("total", command.getBootstrap().getPolicies(0).getId());
    }

    @Test
    void aGlobalStackedPolicyTooSmallToSplitIsRefusedOnlyWhereItWouldBeSplit() throws Exception
    {
        final Path file = Files.writeString(dir.resolve("p.json"), String.format(STACKED, 3));
        final PolicyValidationException refused = assertThrows(PolicyValidationException.class,
            () -> PolicySeed.read(new StorageConfig(dir, file), 4));
        assertTrue(refused.errors().stream().anyMatch(e -> e.contains("'total' is GLOBAL-scoped") &&
            e.contains("raise the burst to at least 4")), refused.getMessage());
        assertEquals(1, PolicySeed.read(new StorageConfig(dir, file), 1).command("n1").getBootstrap()
            .getPoliciesCount(), "one shard splits nothing");
    }

    @Test
    void anUnreadableFileIsNamed()
    {
        final Path absent = dir.resolve("absent.json");
        final PolicyValidationException missing = assertThrows(PolicyValidationException.class,
            () -> PolicySeed.read(new StorageConfig(dir, absent), 1));
        assertTrue(missing.errors().get(0).startsWith("cannot read policy file " + absent + ": "),
            missing.getMessage());
    }
}
