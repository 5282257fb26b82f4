package dev.limiter.cli;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import dev.limiter.protocol.Frame;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.StatusJson;
import dev.limiter.protocol.status.GroupStatus;
import dev.limiter.protocol.status.Member;
import dev.limiter.protocol.status.ShardStatus;
import dev.limiter.protocol.status.StatusReport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * ./limiter status refuses an address that is not host:port as bad input (exit 2), naming it,
 * before asking anybody; it shows every Raft group's leader, what each member leads and its lag.
 */
@Timeout(30)
class StatusCommandTest
{
    /** A data port that answers every STATUS frame with a fixed JSON document. */
    private static final class FakeNode implements AutoCloseable
    {
        private final ServerSocket socket = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
        private final Thread acceptor;

        FakeNode(final IntFunction<String> status) throws IOException
        {
            acceptor = new Thread(() ->
            {
                while (!socket.isClosed())
                {
                    try (Socket connection = socket.accept())
                    {
                        final DataInputStream in = new DataInputStream(connection.getInputStream());
                        final byte[] request = new byte[in.readInt()];
                        in.readFully(request);
                        final long correlationId = ByteBuffer.wrap(request).getLong(4);
                        final byte[] body = status.apply(port()).getBytes(StandardCharsets.UTF_8);
                        final ByteBuffer answer = ByteBuffer.allocate(Frame.HEADER_LENGTH + body.length);
                        answer.putInt(Frame.MIN_LENGTH_FIELD + body.length).put((byte)Frame.VERSION).put((byte)MessageType.STATUS_RESULT)
                            .putShort((short)0).putLong(correlationId).put(body);
                        connection.getOutputStream().write(answer.array());
                    }
                    catch (final IOException closed)
                    {
                        // the test is over, or the command hung up
                    }
                }
            });
            acceptor.setDaemon(true);
            acceptor.start();
        }

        int port()
        {
            return socket.getLocalPort();
        }

        @Override
        public void close() throws IOException
        {
            socket.close();
        }
    }

    private final List<FakeNode> fakes = new ArrayList<>();

    @AfterEach
    void stopFakes() throws IOException
    {
        for (final FakeNode fake : fakes)
        {
            fake.close();
        }
    }

    /** What a member of a three-group cluster reports: it leads group {@code led}; its applied index of group 1 is {@code applied1}. */
    private static String status(final String id, final int port, final int led, final long applied1, final int[] ports)
    {
        return StatusJson.print(report(id, port, led, applied1, ports).setElectionTimeoutMs(150).build());
    }

    private static String status(final String id, final int port, final int led, final long applied1, final int[] ports,
        final int electionTimeoutMs)
    {
        return StatusJson.print(report(id, port, led, applied1, ports).setElectionTimeoutMs(electionTimeoutMs).build());
    }

    /** As {@link #status}, without the election timeout (as a member of a build before the option reports). */
    private static StatusReport.Builder report(final String id, final int port, final int led, final long applied1,
        final int[] ports)
    {
        final StatusReport.Builder report = StatusReport.newBuilder().setId(id).setAddress("127.0.0.1:" + port)
            .setClustered(true).setLeader("n1").setLeaderAddress("127.0.0.1:" + ports[0]).setTerm(2).setAppliedIndex(40)
            .setAppliedDecisions(9)
            .setDigest(1).setRole(led == 0 ? "LEADER" : "FOLLOWER").setCpuNanos(1)
            .addShards(ShardStatus.newBuilder().setShard(0).setRole("LEADER").setBuckets(1));
        for (int g = 0; g < 3; g++)
        {
            report.addGroups(GroupStatus.newBuilder().setGroup(g).setLeader("n" + (g + 1))
                .setLeaderAddress("127.0.0.1:" + ports[g]).setRole(g == led ? "LEADER" : "FOLLOWER").setTerm(2)
                .setAppliedIndex(g == 1 ? applied1 : 40).addShards(g).addShards(g + 3));
            report.addMembers(Member.newBuilder().setId("n" + (g + 1)).setAddress("127.0.0.1:" + ports[g]));
        }
        return report;
    }

    /** What node i of three answers, given its port and all three ports (filled in as the fakes start). */
    private interface ThreeNodeStatus
    {
        String of(int node, int port, int[] ports);
    }

    /** Starts three fake members; returns their ports. */
    private int[] threeNodes(final ThreeNodeStatus status) throws IOException
    {
        final int[] ports = new int[3];
        for (int i = 0; i < 3; i++)
        {
            final int node = i;
            fakes.add(new FakeNode(port -> status.of(node, port, ports)));
            ports[i] = fakes.get(fakes.size() - 1).port();
        }
        return ports;
    }

    private static String printed(final String... args)
    {
        return printed(0, args);
    }

    private static String printed(final int exitStatus, final String... args)
    {
        final PrintStream stdout = System.out;
        final ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try
        {
            assertEquals(exitStatus, new CommandLine(new StatusCommand()).execute(args), "exit status");
        }
        finally
        {
            System.setOut(stdout);
        }
        return captured.toString(StandardCharsets.UTF_8);
    }

    @Test
    void withSeveralRaftGroupsItShowsEachGroupsLeaderWhatEveryMemberLeadsAndTheLagOfTheFurthestBehindGroup() throws Exception
    {
        // n3 has applied 5 fewer entries of group 1 than the others.
        final int[] ports = threeNodes((node, port, all) -> status("n" + (node + 1), port, node, node == 2 ? 95 : 100, all));
        final String table = printed("--server", "127.0.0.1:" + ports[0]);
        final String[] lines = table.split("\n");
        assertTrue(lines[0].contains("LEADS") && lines[0].contains("LAG"), table);
        assertTrue(lines[1].matches("n1\\s+127\\.0\\.0\\.1:\\d+\\s+LEADER\\s+0\\s.*\\s0\\s+1$"), lines[1]);
        assertTrue(lines[2].matches("n2\\s+\\S+\\s+FOLLOWER\\s+1\\s.*"), lines[2]);
        assertTrue(lines[3].matches("n3\\s+\\S+\\s+FOLLOWER\\s+2\\s+n1\\s+2\\s+40\\s+5\\s+1$"), lines[3]);
        assertTrue(table.contains("GROUP  LEADER   SHARDS") && table.contains("1      n2       1,4"), table);
        assertTrue(table.contains("groups led per node: n1=1 n2=1 n3=1"), table);
        assertTrue(!table.contains("WARNING"), "every member runs the same election timeout: " + table);

        final String printed = printed("--server", "127.0.0.1:" + ports[1], "--json");
        assertTrue(printed.endsWith("}\n") && printed.indexOf('\n') == printed.length() - 1, "one line: " + printed);
        final JsonObject json = JsonParser.parseString(printed).getAsJsonObject();
        assertEquals(JsonParser.parseString("[{\"group\":0,\"leader\":\"n1\",\"shards\":[0,3]}," +
            "{\"group\":1,\"leader\":\"n2\",\"shards\":[1,4]},{\"group\":2,\"leader\":\"n3\",\"shards\":[2,5]}]"),
            json.get("groups"), printed);
        assertTrue(json.get("electionTimeoutsAgree").getAsBoolean(), printed);
        assertEquals(JsonParser.parseString("{\"n1\":1,\"n2\":1,\"n3\":1}"), json.get("leadersPerNode"), printed);
        final JsonObject n3 = json.getAsJsonArray("members").get(2).getAsJsonObject();
        assertEquals("n3", n3.get("id").getAsString(), printed);
        assertEquals(5, n3.get("lag").getAsLong(), printed);
        // A member's status as the node printed it: its int64 fields as strings.
        assertEquals("95", n3.getAsJsonArray("groups").get(1).getAsJsonObject().get("appliedIndex").getAsString(),
            printed);
    }

    @Test
    void membersRunningDifferentElectionTimeoutsAreNamedInAWarning() throws Exception
    {
        final int[] ports = threeNodes((node, port, all) -> status("n" + (node + 1), port, node, 100, all, node == 2 ? 500 : 150));
        final String table = printed("--server", "127.0.0.1:" + ports[0]);
        assertTrue(table.contains("WARNING: the members run different --election-timeout-ms (n1=150 ms, n2=150 ms, n3=500 ms)") &&
            table.contains("restart the members with the same value"), table);
        final String printed = printed("--server", "127.0.0.1:" + ports[0], "--json");
        final JsonObject json = JsonParser.parseString(printed).getAsJsonObject();
        assertFalse(json.get("electionTimeoutsAgree").getAsBoolean(), printed);
        assertEquals(500, json.getAsJsonArray("members").get(2).getAsJsonObject().get("electionTimeoutMs").getAsInt(),
            printed);
    }

    @Test
    void aMemberOfABuildBeforeTheOptionCountsAsRunningTheOldFixed150Milliseconds() throws Exception
    {
        // n1 and n2 are older builds (no electionTimeoutMs in their status); n3 runs 500 ms.
        final int[] ports = threeNodes((node, port, all) -> node == 2 ? status("n3", port, node, 100, all, 500)
            : StatusJson.print(report("n" + (node + 1), port, node, 100, all).build()));
        final String table = printed("--server", "127.0.0.1:" + ports[0]);
        assertTrue(table.contains("different --election-timeout-ms (n1=150 ms, n2=150 ms, n3=500 ms)"), table);
    }

    @Test
    void membersOfOneBuildShowItsVersionAndARollingUpgradeNamesEachMembersBuild()
    {
        final StatusReport.Builder current = StatusReport.newBuilder().setVersion("0.2.0").setCommit("1a2b3c4d5e6f")
            .setProtocolGeneration(2);
        assertEquals("version 0.2.0 (commit 1a2b3c4d5e6f, protocol generation 2)", StatusCommand.versions(List.of(
            current.setId("n1").build(), current.setId("n2").build())));
        assertEquals("NOTE: the members run different builds (a rolling upgrade under way?); finish it so every member " +
            "runs one:\n  n1: 0.2.0 (commit 1a2b3c4d5e6f, protocol generation 2)\n  n2: a build from before versions",
            StatusCommand.versions(List.of(current.setId("n1").build(), StatusReport.newBuilder().setId("n2").build())));
    }

    @Test
    void aNewerNodesFieldsAreIgnoredAndAnAnswerThatIsNotAStatusIsNamedAsTheProblem() throws Exception
    {
        // n2 is a newer build with fields this CLI does not know; n3 answers something that is not a status.
        final int[] ports = threeNodes((node, port, all) -> switch (node)
        {
            case 1 -> "{\"futureField\":{\"x\":[1]}," + status("n2", port, node, 100, all).substring(1);
            case 2 -> "{\"id\":\"n3\",\"term\":";
            default -> status("n1", port, node, 100, all);
        });
        final String table = printed(1, "--server", "127.0.0.1:" + ports[0]);
        final String[] lines = table.split("\n");
        assertTrue(lines[2].matches("n2\\s+\\S+\\s+FOLLOWER\\s+1\\s.*"), table);
        assertTrue(lines[3].startsWith("?") && lines[3].contains("UNREACHABLE") &&
            lines[3].contains("not a node status") &&
            lines[3].contains("{\"id\":\"n3\",\"term\":"), table);

        final JsonObject json =
            JsonParser.parseString(printed(1, "--server", "127.0.0.1:" + ports[0], "--json")).getAsJsonObject();
        assertTrue(json.getAsJsonArray("members").get(1).getAsJsonObject().has("futureField"),
            "passed on as the node said it: " + json);
        final JsonObject n3 = json.getAsJsonArray("members").get(2).getAsJsonObject();
        assertEquals("UNREACHABLE", n3.get("role").getAsString(), json.toString());
        assertTrue(n3.get("error").getAsString().contains("not a node status"), json.toString());
    }

    private static String refusal(final String server)
    {
        final PrintStream stderr = System.err;
        final ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try
        {
            assertEquals(2, new CommandLine(new StatusCommand()).execute("--server", server), "exit status for --server " + server);
        }
        finally
        {
            System.setErr(stderr);
        }
        return captured.toString(StandardCharsets.UTF_8);
    }

    @Test
    void anAddressThatIsNotHostAndPortIsBadInput()
    {
        final String noPort = refusal("nohost");
        assertTrue(noPort.contains("'nohost' is not host:port"), noPort);
        final String badPort = refusal("127.0.0.1:99999");
        assertTrue(badPort.contains("port 99999 outside 1-65535"), badPort);
        final String notANumber = refusal("127.0.0.1:abc");
        assertTrue(notANumber.contains("not a number"), notANumber);
    }
}
