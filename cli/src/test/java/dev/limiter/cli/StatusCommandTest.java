package dev.limiter.cli;

import dev.limiter.protocol.Frame;
import dev.limiter.protocol.MessageType;
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
        return status(id, port, led, applied1, ports, 150);
    }

    private static String status(final String id, final int port, final int led, final long applied1, final int[] ports,
        final long electionTimeoutMs)
    {
        final StringBuilder groups = new StringBuilder();
        for (int g = 0; g < 3; g++)
        {
            groups.append(g == 0 ? "" : ",").append("{\"group\":").append(g).append(",\"leader\":\"n").append(g + 1)
                .append("\",\"leaderAddress\":\"127.0.0.1:").append(ports[g]).append("\",\"role\":\"").append(g == led ? "LEADER" : "FOLLOWER")
                .append("\",\"term\":2,\"appliedIndex\":").append(g == 1 ? applied1 : 40).append(",\"shards\":[").append(g).append(',')
                .append(g + 3).append("]}");
        }
        return "{\"id\":\"" + id + "\",\"address\":\"127.0.0.1:" + port + "\",\"clustered\":true,\"leader\":\"n1\"," +
            "\"leaderAddress\":\"127.0.0.1:" + ports[0] + "\",\"term\":2,\"appliedIndex\":40,\"electionTimeoutMs\":" + electionTimeoutMs + ",\"appliedDecisions\":9,\"digest\":1," +
            "\"groups\":[" + groups + "],\"role\":\"" + (led == 0 ? "LEADER" : "FOLLOWER") + "\",\"members\":[" +
            "{\"id\":\"n1\",\"address\":\"127.0.0.1:" + ports[0] + "\"},{\"id\":\"n2\",\"address\":\"127.0.0.1:" + ports[1] + "\"}," +
            "{\"id\":\"n3\",\"address\":\"127.0.0.1:" + ports[2] + "\"}],\"cpuNanos\":1,\"decisionFrames\":0,\"redirects\":0," +
            "\"shards\":[{\"shard\":0,\"role\":\"LEADER\",\"buckets\":1}]}";
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
        final PrintStream stdout = System.out;
        final ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try
        {
            assertEquals(0, new CommandLine(new StatusCommand()).execute(args), "exit status");
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

        final String json = printed("--server", "127.0.0.1:" + ports[1], "--json");
        assertTrue(json.contains("\"groups\":[{\"group\":0,\"leader\":\"n1\",\"shards\":[0,3]},{\"group\":1,\"leader\":\"n2\""), json);
        assertTrue(json.endsWith("\"electionTimeoutsAgree\":true,\"leadersPerNode\":{\"n1\":1,\"n2\":1,\"n3\":1}}\n"), json);
        assertTrue(json.contains("\"id\":\"n3\"") && json.contains("\"lag\":5"), json);
    }

    @Test
    void membersRunningDifferentElectionTimeoutsAreNamedInAWarning() throws Exception
    {
        final int[] ports = threeNodes((node, port, all) -> status("n" + (node + 1), port, node, 100, all, node == 2 ? 500 : 150));
        final String table = printed("--server", "127.0.0.1:" + ports[0]);
        assertTrue(table.contains("WARNING: the members run different --election-timeout-ms (n1=150 ms, n2=150 ms, n3=500 ms)") &&
            table.contains("restart the members with the same value"), table);
        final String json = printed("--server", "127.0.0.1:" + ports[0], "--json");
        assertTrue(json.contains("\"electionTimeoutsAgree\":false") && json.contains("\"electionTimeoutMs\":500"), json);
    }

    @Test
    void aMemberOfABuildBeforeTheOptionCountsAsRunningTheOldFixed150Milliseconds() throws Exception
    {
        // n1 and n2 are older builds (no electionTimeoutMs in their status); n3 runs 500 ms.
        final int[] ports = threeNodes((node, port, all) -> node == 2 ? status("n3", port, node, 100, all, 500)
            : status("n" + (node + 1), port, node, 100, all).replace("\"electionTimeoutMs\":150,", ""));
        final String table = printed("--server", "127.0.0.1:" + ports[0]);
        assertTrue(table.contains("different --election-timeout-ms (n1=150 ms, n2=150 ms, n3=500 ms)"), table);
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
