package dev.limiter.server;

import com.google.protobuf.Timestamp;
import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.MessageType;
import dev.limiter.protocol.policy.DegradedWindow;
import dev.limiter.server.net.SdkReports;
import dev.limiter.server.net.PolicyPublisher;
import dev.limiter.server.testing.Await;
import dev.limiter.server.testing.ClusterPorts;
import dev.limiter.server.testing.ManualClock;
import dev.limiter.server.testing.RawConnection;
import dev.limiter.server.testing.TestNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static dev.limiter.server.testing.TestNode.SECOND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What anybody who can reach a data port can do: decide and read policies, never change the
 * cluster or flood replicated state.
 */
@Timeout(60)
class DataPortSecurityTest
{
    @TempDir
    Path dir;

    @Test
    void aRawMembersFrameOnTheDataPortIsRefusedAndChangesNothing() throws Exception
    {
        final int port = ClusterPorts.free(1, 100)[0];
        Files.createDirectories(dir.resolve("config"));
        final ServerConfig config = TestNode.config(dir.resolve("config"), port, 1)
            .nodeId("n1").peers(Map.of("n1", new InetSocketAddress("127.0.0.1", port))).raftPortOffset(100).dataDir(dir.resolve("n1"));
        try (StoreServer server = new StoreServer(config).start())
        {
            Await.until("the one-member cluster to elect itself", Duration.ofSeconds(20),
                () -> server.replication().canDecide());
            assertTrue(server.replication().canDecide(), "the one-member cluster elected itself");
            // The 33-byte frame that made a stranger the only member: n9 at an address nobody serves.
            try (RawConnection raw = new RawConnection(port))
            {
                final RawConnection.Answer answer = raw.request(MessageType.MEMBERS, 7,
                    "n9=127.0.0.1:7401".getBytes(StandardCharsets.UTF_8));
                assertEquals(MessageType.ERROR, answer.type());
                assertEquals(ErrorCode.FORBIDDEN, answer.errorCode());
                assertTrue(answer.errorMessage().contains("admin API"), answer.errorMessage());
            }
            // time for a refused change to do harm: nothing may happen in it
            Thread.sleep(500);
            assertEquals(Map.of("n1", "127.0.0.1:" + port), server.replication().members(), "membership is unchanged");
            assertTrue(server.replication().canDecide(), "the node still leads and decides");
            assertTrue(server.metrics().scrape().contains("limiter_refusals_total{port=\"data\",reason=\"members-on-data-port\"} 1.0"),
                "the refusal is counted");
        }
    }

    @Test
    void oneConnectionTakesABurstOfSdkReportsThenIsRefusedWithOverloaded() throws Exception
    {
        try (StoreServer server = TestNode.start(dir, new ManualClock(SECOND), 1);
             RawConnection raw = new RawConnection(server.port()))
        {
            int accepted = 0;
            int refused = 0;
            for (int i = 0; i < SdkReports.REPORTS_PER_CONNECTION_BURST + 30; i++)
            {
                final RawConnection.Answer answer = raw.request(MessageType.DEGRADED_REPORT, i, window("sdk-" + i, i).toByteArray());
                if (answer.type() == MessageType.DEGRADED_REPORT_RESULT)
                {
                    accepted++;
                }
                else
                {
                    assertEquals(ErrorCode.OVERLOADED, answer.errorCode(), answer.errorMessage());
                    refused++;
                }
            }
            // About a burst's worth (plus what refilled at 1/s while the test ran); the rest refused.
            assertTrue(accepted >= SdkReports.REPORTS_PER_CONNECTION_BURST && accepted <= SdkReports.REPORTS_PER_CONNECTION_BURST + 5,
                accepted + " accepted");
            assertTrue(refused >= 25, refused + " refused");
            assertEquals(accepted, server.policyState().audit(r -> r.getAction().equals("SDK_DEGRADED_WINDOW"), 10_000).size());

            // Bad windows are refused before they cost anything.
            final RawConnection.Answer bad = raw.request(MessageType.DEGRADED_REPORT, 999,
                window("bad\u0001client", 1).toByteArray());
            assertEquals(ErrorCode.MALFORMED_FRAME, bad.errorCode(), bad.errorMessage());
            assertTrue(bad.errorMessage().contains("control characters"), bad.errorMessage());
        }
    }

    @Test
    void madeUpInstanceIdsFromOneAddressCountAtMostTheBoundPerAddress() throws Exception
    {
        try (StoreServer server = TestNode.start(dir, new ManualClock(SECOND), 1))
        {
            final List<RawConnection> connections = new ArrayList<>();
            try
            {
                for (int i = 0; i < PolicyPublisher.MAX_INSTANCES_PER_ADDRESS + 36; i++)
                {
                    final RawConnection raw = new RawConnection(server.port());
                    connections.add(raw);
                    final byte[] id = ("made-up-" + i).getBytes(StandardCharsets.UTF_8);
                    final byte[] body = new byte[2 + id.length];
                    body[0] = 3; // subscribe, with an instance id
                    body[1] = (byte)id.length;
                    System.arraycopy(id, 0, body, 2, id.length);
                    assertEquals(MessageType.POLICIES_RESULT, raw.request(MessageType.POLICIES, i, body).type(),
                        "a subscription is still served policies");
                }
                final String expected = "limiter_sdk_instances " + PolicyPublisher.MAX_INSTANCES_PER_ADDRESS + ".0";
                Await.until("the instance count to reach the per-address cap", Duration.ofSeconds(5),
                    () -> expected.equals(sdkInstances(server)), () -> sdkInstances(server));
                assertEquals(expected, sdkInstances(server));
            }
            finally
            {
                for (final RawConnection raw : connections)
                {
                    raw.close();
                }
            }
        }
    }

    private static DegradedWindow window(final String client, final int second)
    {
        return DegradedWindow.newBuilder().setClient(client)
            .setStart(Timestamp.newBuilder().setSeconds(1_796_000_000L + second))
            .setEnd(Timestamp.newBuilder().setSeconds(1_796_000_001L + second))
            .putDecisions("orders|OPEN|allowed", 3).build();
    }

    private static String sdkInstances(final StoreServer server)
    {
        return server.metrics().scrape().lines().filter(l -> l.startsWith("limiter_sdk_instances ")).findFirst()
            .orElse("");
    }
}
