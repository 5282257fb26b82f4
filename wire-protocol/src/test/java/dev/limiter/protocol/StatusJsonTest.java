package dev.limiter.protocol;

import dev.limiter.protocol.status.GroupStatus;
import dev.limiter.protocol.status.Member;
import dev.limiter.protocol.status.PeerRegion;
import dev.limiter.protocol.status.RegionShare;
import dev.limiter.protocol.status.RegionStatus;
import dev.limiter.protocol.status.ShardStatus;
import dev.limiter.protocol.status.StatusReport;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class StatusJsonTest
{
    /** A member's status with every field set, none at its default value. */
    static StatusReport everyFieldSet()
    {
        return StatusReport.newBuilder()
            .setId("n1").setAddress("127.0.0.1:7401").setClustered(true)
            .setLeader("n2").setLeaderAddress("127.0.0.1:7402").setTerm(7).setAppliedIndex(5_000_000_000L)
            .setElectionTimeoutMs(300).setAppliedDecisions(123_456_789_012L).setDigest(-8_070_450_532_247_928_833L)
            .addGroups(GroupStatus.newBuilder().setGroup(0).setLeader("n2").setLeaderAddress("127.0.0.1:7402")
                .setRole("FOLLOWER").setTerm(7).setAppliedIndex(5_000_000_000L).addShards(0).addShards(2))
            .addGroups(GroupStatus.newBuilder().setGroup(1).setLeader("n1").setLeaderAddress("127.0.0.1:7401")
                .setRole("LEADER").setTerm(3).setAppliedIndex(42).addShards(1).addShards(3))
            .setRole("FOLLOWER")
            .addMembers(Member.newBuilder().setId("n1").setAddress("127.0.0.1:7401"))
            .addMembers(Member.newBuilder().setId("n2").setAddress("127.0.0.1:7402"))
            .setRegion(RegionStatus.newBuilder().setName("eu").setLeads(true).setSlotMs(250)
                .addShares(RegionShare.newBuilder().setPolicy("orders-global").setShare(0.95).setDemandPerSecond(2150.4)
                    .setDecidesWith(0.9).setReported(0.95))
                .addRegions(PeerRegion.newBuilder().setRegion("us").setReportAgeMs(8)))
            .setPid(4321).setCpuNanos(9_876_543_210L).setDecisionFrames(3_000_000_000L).setRedirects(17)
            .addShards(ShardStatus.newBuilder().setShard(0).setRole("FOLLOWER").setGroup(0)
                .setLeaderAddress("127.0.0.1:7402").setBuckets(1000))
            .addShards(ShardStatus.newBuilder().setShard(1).setRole("LEADER").setGroup(1)
                .setLeaderAddress("127.0.0.1:7401").setBuckets(12))
            .build();
    }

    @Test
    void shouldReadBackEveryFieldItPrinted()
    {
        final StatusReport status = everyFieldSet();

        final String json = StatusJson.print(status);

        assertEquals(status, StatusJson.parse(json));
        assertFalse(json.contains("\n"), "one line: " + json);
    }

    @Test
    void shouldKeepTheFieldNamesOperatorsRead()
    {
        final String json = StatusJson.print(everyFieldSet());

        for (final String name : new String[]{"\"leaderAddress\":", "\"appliedIndex\":\"5000000000\"",
            "\"electionTimeoutMs\":300", "\"cpuNanos\":", "\"decisionFrames\":", "\"demandPerSecond\":",
            "\"decidesWith\":", "\"reportAgeMs\":\"8\"", "\"slotMs\":250", "\"pid\":4321", "\"buckets\":1000"})
        {
            assertTrue(json.contains(name), name + " in " + json);
        }
    }

    @Test
    void shouldPrintZeroCountersAndLeaveOutWhatASingleNodeDoesNotHave()
    {
        final StatusReport single = StatusReport.newBuilder().setId("single").setAddress("127.0.0.1:7401")
            .setRole("LEADER").addShards(ShardStatus.newBuilder().setShard(0).setRole("LEADER")).build();

        final String json = StatusJson.print(single);

        assertTrue(json.contains("\"redirects\":\"0\"") && json.contains("\"buckets\":0") &&
            json.contains("\"clustered\":false") && json.contains("\"groups\":[]"), json);
        assertFalse(json.contains("\"term\"") || json.contains("\"electionTimeoutMs\"") ||
            json.contains("\"region\"") || json.contains("\"group\":"), json);
        final StatusReport read = StatusJson.parse(json);
        assertFalse(read.hasTerm() || read.hasElectionTimeoutMs() || read.hasRegion() || read.getShards(0).hasGroup());
        assertEquals(single, read);
    }

    @Test
    void shouldIgnoreFieldsOfANewerNode()
    {
        final String json = StatusJson.print(everyFieldSet());
        final String newer = "{\"futureCounter\":\"12\",\"futureSection\":{\"a\":[1,2]}," +
            json.substring(1, json.length() - 1) +
            ",\"shards\":[{\"shard\":0,\"role\":\"LEADER\",\"buckets\":3,\"futureShardField\":true}]}";

        final StatusReport read = StatusJson.parse(newer);

        assertEquals("n1", read.getId());
        assertEquals(300, read.getElectionTimeoutMs());
        assertEquals(3, read.getShards(0).getBuckets());
    }

    @Test
    void shouldReadTheDocumentOfANodeThatPrintedNumbersAsNumbers()
    {
        // Nodes before the protobuf document printed every number as a JSON number.
        final StatusReport read = StatusJson.parse("{\"id\":\"n1\",\"term\":3,\"appliedIndex\":42,\"digest\":-5," +
            "\"cpuNanos\":100,\"region\":{\"name\":\"eu\",\"shares\":[{\"policy\":\"p\",\"share\":0.9500}]}}");

        assertEquals(42, read.getAppliedIndex());
        assertEquals(-5, read.getDigest());
        assertEquals(0.95, read.getRegion().getShares(0).getShare());
        assertFalse(read.hasElectionTimeoutMs(), "a node from before --election-timeout-ms does not report it");
    }

    @Test
    void shouldSayWhatIsWrongWithMalformedJson()
    {
        final IllegalArgumentException truncated = assertThrows(IllegalArgumentException.class,
            () -> StatusJson.parse("{\"id\":\"n1\",\"term\":"));
        assertTrue(truncated.getMessage().startsWith("not a node status (") &&
            truncated.getMessage().contains("{\"id\":\"n1\",\"term\":"), truncated.getMessage());

        final IllegalArgumentException wrongType = assertThrows(IllegalArgumentException.class,
            () -> StatusJson.parse("{\"id\":\"n1\",\"pid\":\"not a number\"}"));
        assertTrue(wrongType.getMessage().contains("not a number"), wrongType.getMessage());

        final IllegalArgumentException notJson = assertThrows(IllegalArgumentException.class,
            () -> StatusJson.parse("ERROR NOT_LEADER"));
        assertTrue(notJson.getMessage().contains("ERROR NOT_LEADER"), notJson.getMessage());

        final IllegalArgumentException empty =
            assertThrows(IllegalArgumentException.class, () -> StatusJson.parse(" "));
        assertEquals("not a node status: the answer is empty", empty.getMessage());
    }
}
