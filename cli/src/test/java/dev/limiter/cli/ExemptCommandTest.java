package dev.limiter.cli;

import com.google.gson.JsonElement;
import com.google.gson.JsonParser;
import com.google.protobuf.util.JsonFormat;
import dev.limiter.protocol.policy.Exemption;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static dev.limiter.cli.PolicyCommandTest.assertOneLineFailure;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(30)
class ExemptCommandTest
{
    static final String LIST = """
        {"exemptions":[
          {"id":"beta-acme","tenant":"acme","owner":"sales","reason":"load test","expiresAt":"2026-12-03T12:00:00.750Z",
           "createdAt":"2026-12-03T10:00:00Z","actor":"alice","bypassed":"1234"},
          {"id":"checkout-bob","tenant":"acme","principal":"bob","route":"/v1/orders/{id}","owner":"team-orders",
           "reason":"reproduce ticket 42","expiresAt":"2026-12-04T00:00:00Z","actor":"carol","addedByANewerNode":true}]}""";

    @TempDir
    Path dir;

    private final List<FakeAdminServer> servers = new ArrayList<>();

    private final Map<String, String> env = Map.of(AdminClient.TOKEN_ENVIRONMENT, PolicyCommandTest.TOKEN);

    @AfterEach
    void stopServers()
    {
        servers.forEach(FakeAdminServer::close);
    }

    private FakeAdminServer server(final int status, final String body) throws Exception
    {
        final FakeAdminServer server = FakeAdminServer.start().answer(status, body);
        servers.add(server);
        return server;
    }

    private PolicyCommandTest.Result exempt(final String... args)
    {
        return CommandRun.capture(ExemptCommand::run, args, env, dir);
    }

    /** {@code exempt add} with the arguments given, on this node, the rest of a valid call added. */
    private PolicyCommandTest.Result add(final FakeAdminServer node, final String... args)
    {
        final List<String> all = new ArrayList<>(List.of("add"));
        all.addAll(List.of(args));
        all.addAll(List.of("--admin", node.address()));
        return exempt(all.toArray(String[]::new));
    }

    private static void assertRejectedBeforeAnyCall(final PolicyCommandTest.Result result, final String prefix, final FakeAdminServer node)
    {
        assertOneLineFailure(result, prefix);
        assertEquals(2, result.status(), result.toString());
        assertEquals(0, node.requests.size(), "nothing may be sent: " + result);
    }

    @Test
    void shouldPutTheExemptionWithAnExpiryThatFarFromNow() throws Exception
    {
        final FakeAdminServer node = server(200, "{}");
        final Instant before = Instant.now();

        final PolicyCommandTest.Result result = add(node, "beta-acme", "--tenant", "acme", "--route", "/v1/orders/{id}", "--owner", "sales",
            "--reason", "load test", "--expires-in", "2h", "--actor", "alice");

        final Instant after = Instant.now();
        assertEquals(0, result.status(), result.toString());
        final FakeAdminServer.Seen seen = node.last();
        assertEquals("PUT", seen.method());
        assertEquals("/v1/exemptions/beta-acme", seen.rawPath());
        assertEquals("Bearer " + PolicyCommandTest.TOKEN, seen.authorization());
        assertEquals("alice", seen.actor());
        assertEquals("application/json", seen.contentType());
        final Exemption.Builder sent = Exemption.newBuilder();
        JsonFormat.parser().merge(seen.body(), sent);
        assertEquals("acme", sent.getTenant());
        assertEquals("", sent.getPrincipal());
        assertEquals("/v1/orders/{id}", sent.getRoute());
        assertEquals("sales", sent.getOwner());
        assertEquals("load test", sent.getReason());
        final Instant expires = Instant.ofEpochSecond(sent.getExpiresAt().getSeconds(), sent.getExpiresAt().getNanos());
        assertFalse(expires.isBefore(before.plus(Duration.ofHours(2)).truncatedTo(ChronoUnit.SECONDS)), expires + " vs " + before);
        assertFalse(expires.isAfter(after.plus(Duration.ofHours(2))), expires + " vs " + after);
        assertEquals("exemption beta-acme in force until " + expires + "\n", result.out());
        assertEquals("", result.err());
    }

    @Test
    void shouldPutAPrincipalWithItsTenantUntilAnRfc3339Time() throws Exception
    {
        final FakeAdminServer node = server(200, "{}");
        final Instant end = Instant.now().plus(Duration.ofDays(1)).truncatedTo(ChronoUnit.SECONDS);

        final PolicyCommandTest.Result result = add(node, "bob", "--tenant", "acme", "--principal", "bob", "--owner", "support",
            "--reason", "ticket 42", "--expires-at", end.toString());

        assertEquals(0, result.status(), result.toString());
        final Exemption.Builder sent = Exemption.newBuilder();
        JsonFormat.parser().merge(node.last().body(), sent);
        assertEquals("acme", sent.getTenant());
        assertEquals("bob", sent.getPrincipal());
        assertEquals(end.getEpochSecond(), sent.getExpiresAt().getSeconds());
        assertEquals("exemption bob in force until " + end + "\n", result.out());
    }

    @Test
    void shouldPrintTheAnswerAsJsonWithJson() throws Exception
    {
        final FakeAdminServer node = server(200, "{\"setVersion\":\"7\"}");

        final PolicyCommandTest.Result result = add(node, "beta-acme", "--tenant", "acme", "--owner", "sales", "--reason", "load test",
            "--expires-in", "30m", "--json");

        assertEquals(0, result.status(), result.toString());
        assertEquals("7", JsonParser.parseString(result.out()).getAsJsonObject().get("setVersion").getAsString());
    }

    @Test
    void shouldRejectAMissingOwnerBeforeAnyCall() throws Exception
    {
        final FakeAdminServer node = server(200, "{}");

        assertRejectedBeforeAnyCall(add(node, "beta-acme", "--tenant", "acme", "--reason", "load test", "--expires-in", "2h"),
            "limiter exempt: Missing required option: '--owner=O'", node);
        assertRejectedBeforeAnyCall(add(node, "beta-acme", "--tenant", "acme", "--owner", " ", "--reason", "load test", "--expires-in", "2h"),
            "limiter exempt: --owner is empty", node);
    }

    @Test
    void shouldRejectAMissingReasonBeforeAnyCall() throws Exception
    {
        final FakeAdminServer node = server(200, "{}");

        assertRejectedBeforeAnyCall(add(node, "beta-acme", "--tenant", "acme", "--owner", "sales", "--expires-in", "2h"),
            "limiter exempt: Missing required option: '--reason=R'", node);
        assertRejectedBeforeAnyCall(add(node, "beta-acme", "--tenant", "acme", "--owner", "sales", "--reason", "", "--expires-in", "2h"),
            "limiter exempt: --reason is empty", node);
    }

    @Test
    void shouldRejectAnExemptionThatCoversNothingBeforeAnyCall() throws Exception
    {
        final FakeAdminServer node = server(200, "{}");

        assertRejectedBeforeAnyCall(add(node, "beta-acme", "--owner", "sales", "--reason", "load test", "--expires-in", "2h"),
            "limiter exempt: say whose requests it exempts: --tenant T, --principal P (with --tenant) and/or --route R", node);
        assertRejectedBeforeAnyCall(add(node, "beta-acme", "--tenant", " ", "--owner", "sales", "--reason", "load test", "--expires-in", "2h"),
            "limiter exempt: --tenant is empty", node);
    }

    @Test
    void shouldRejectAPrincipalWithoutItsTenantBeforeAnyCall() throws Exception
    {
        final FakeAdminServer node = server(200, "{}");

        assertRejectedBeforeAnyCall(add(node, "bob", "--principal", "bob", "--route", "/v1/orders", "--owner", "support", "--reason", "r",
            "--expires-in", "2h"), "limiter exempt: --principal needs --tenant", node);
    }

    @Test
    void shouldRejectBothOrNeitherExpiryOptionBeforeAnyCall() throws Exception
    {
        final FakeAdminServer node = server(200, "{}");

        assertRejectedBeforeAnyCall(add(node, "beta-acme", "--tenant", "acme", "--owner", "sales", "--reason", "load test",
            "--expires-in", "2h", "--expires-at", "2099-01-01T00:00:00Z"), "limiter exempt: give either --expires-in or --expires-at, not both", node);
        assertRejectedBeforeAnyCall(add(node, "beta-acme", "--tenant", "acme", "--owner", "sales", "--reason", "load test"),
            "limiter exempt: no expiry given: pass --expires-in DURATION", node);
    }

    @Test
    void shouldRejectABadDurationBeforeAnyCall() throws Exception
    {
        final FakeAdminServer node = server(200, "{}");

        for (final String bad : List.of("2", "2 hours", "h", "-1h", "1.5h", "2w", "0m", "999999999d"))
        {
            final PolicyCommandTest.Result result = add(node, "beta-acme", "--tenant", "acme", "--owner", "sales", "--reason", "load test",
                "--expires-in", bad);
            assertRejectedBeforeAnyCall(result, "limiter exempt: --expires-in ", node);
        }
        final PolicyCommandTest.Result result = add(node, "beta-acme", "--tenant", "acme", "--owner", "sales", "--reason", "load test",
            "--expires-in", "2hours");
        assertTrue(result.err().contains("'2hours' is not a duration"), result.err());
        assertTrue(result.err().contains("30m, 2h, 1d"), result.err());
    }

    @Test
    void shouldAcceptEveryDurationUnit() throws Exception
    {
        final Instant now = Instant.parse("2026-12-03T10:00:00.400Z");

        assertEquals(Instant.parse("2026-12-03T10:01:30Z"), ExemptCommand.expiry("90s", null, now));
        assertEquals(Instant.parse("2026-12-03T10:30:00Z"), ExemptCommand.expiry("30m", null, now));
        assertEquals(Instant.parse("2026-12-03T12:00:00Z"), ExemptCommand.expiry("2h", null, now));
        assertEquals(Instant.parse("2026-12-04T10:00:00Z"), ExemptCommand.expiry("1d", null, now));
        assertEquals(Instant.parse("2026-12-03T11:30:00Z"), ExemptCommand.expiry("1h30m", null, now));
        assertEquals(Instant.parse("2026-12-03T12:00:00Z"), ExemptCommand.expiry(null, "2026-12-03T13:00:00+01:00", now));
    }

    @Test
    void shouldRejectAnExpiryInThePastOrNotRfc3339BeforeAnyCall() throws Exception
    {
        final FakeAdminServer node = server(200, "{}");
        final String past = Instant.now().minus(Duration.ofMinutes(5)).truncatedTo(ChronoUnit.SECONDS).toString();

        assertRejectedBeforeAnyCall(add(node, "beta-acme", "--tenant", "acme", "--owner", "sales", "--reason", "load test",
            "--expires-at", past), "limiter exempt: --expires-at " + past + " is not in the future", node);
        assertRejectedBeforeAnyCall(add(node, "beta-acme", "--tenant", "acme", "--owner", "sales", "--reason", "load test",
            "--expires-at", "tomorrow"), "limiter exempt: --expires-at 'tomorrow' is not an RFC 3339 time", node);
    }

    @Test
    void shouldPrintEveryFieldErrorOnOneLine() throws Exception
    {
        final FakeAdminServer node = server(400, """
            {"error":"invalid exemption beta-acme; nothing was changed",
             "errors":["id: must match [a-z0-9][a-z0-9._-]{0,62}","expiresAt: at most 90 days ahead"]}""");

        final PolicyCommandTest.Result result = add(node, "beta-acme", "--tenant", "acme", "--owner", "sales", "--reason", "load test",
            "--expires-in", "100d");

        assertOneLineFailure(result, "limiter exempt: invalid exemption beta-acme; nothing was changed: " +
            "id: must match [a-z0-9][a-z0-9._-]{0,62}; expiresAt: at most 90 days ahead (HTTP 400 from " + node.address() + ")");
        assertEquals(1, result.status());
        assertEquals(1, node.requests.size());
    }

    @Test
    void shouldMoveOnToTheNextAddressWhenANodeIsNotTheLeader() throws Exception
    {
        final FakeAdminServer follower = server(421, "{\"error\":\"not the leader\",\"leader\":\"n2\"}");
        final FakeAdminServer leader = server(200, "{}");

        final PolicyCommandTest.Result result = exempt("add", "beta-acme", "--tenant", "acme", "--owner", "sales", "--reason", "load test",
            "--expires-in", "2h", "--admin", follower.address() + "," + leader.address());

        assertEquals(0, result.status(), result.toString());
        assertEquals(1, follower.requests.size());
        assertEquals(1, leader.requests.size());
        assertEquals("PUT", leader.last().method());
        assertEquals(follower.last().body(), leader.last().body());
        assertTrue(result.out().startsWith("exemption beta-acme in force until "), result.out());
    }

    @Test
    void shouldNotPassAnAddOnAfterANodeTookItButDidNotAnswerInTime() throws Exception
    {
        final FakeAdminServer hung = server(200, "{}").hang();
        final FakeAdminServer node = server(200, "{}");

        final PolicyCommandTest.Result result = exempt("add", "beta-acme", "--tenant", "acme", "--owner", "sales", "--reason", "load test",
            "--expires-in", "2h", "--timeout-ms", "300", "--admin", hung.address() + "," + node.address());

        assertOneLineFailure(result, "limiter exempt: " + hung.address() + " did not answer within 300 ms");
        assertEquals(1, result.status());
        assertEquals(0, node.requests.size());
    }

    @Test
    void shouldListTheActiveExemptionsAsATable() throws Exception
    {
        final FakeAdminServer node = server(200, LIST);

        final PolicyCommandTest.Result result = exempt("list", "--admin", node.address(), "--actor", "alice");

        assertEquals(0, result.status(), result.toString());
        assertEquals("GET", node.last().method());
        assertEquals("/v1/exemptions", node.last().rawPath());
        assertEquals("Bearer " + PolicyCommandTest.TOKEN, node.last().authorization());
        assertEquals("alice", node.last().actor());
        final String[] lines = result.out().split("\n");
        assertEquals(3, lines.length, result.out());
        assertTrue(lines[0].matches("ID +TENANT +PRINCIPAL +ROUTE +EXPIRES +OWNER +BYPASSED +REASON"), lines[0]);
        assertTrue(lines[1].matches("beta-acme +acme +- +- +2026-12-03T12:00:00Z +sales +1234 +load test"), lines[1]);
        assertTrue(lines[2].matches("checkout-bob +acme +bob +/v1/orders/\\{id} +2026-12-04T00:00:00Z +team-orders +0 +reproduce ticket 42"),
            lines[2]);
        assertEquals(lines[0].indexOf("EXPIRES"), lines[1].indexOf("2026-"), result.out());
        assertEquals("", result.err());
    }

    @Test
    void shouldSaySoWhenNoExemptionIsActive() throws Exception
    {
        final FakeAdminServer node = server(200, "{}");

        final PolicyCommandTest.Result result = exempt("list", "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        assertEquals("no active exemptions\n", result.out());
    }

    @Test
    void shouldListAsExactlyOneJsonDocumentWithJson() throws Exception
    {
        final FakeAdminServer node = server(200, LIST);

        final PolicyCommandTest.Result result = exempt("list", "--json", "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        // parseString refuses anything after the first document.
        final JsonElement printed = JsonParser.parseString(result.out());
        final JsonElement first = printed.getAsJsonObject().getAsJsonArray("exemptions").get(0);
        assertEquals("beta-acme", first.getAsJsonObject().get("id").getAsString());
        assertEquals("1234", first.getAsJsonObject().get("bypassed").getAsString());
        assertEquals("2026-12-03T12:00:00.750Z", first.getAsJsonObject().get("expiresAt").getAsString());
        assertEquals(2, printed.getAsJsonObject().getAsJsonArray("exemptions").size());
        assertTrue(result.out().endsWith("}\n"), result.out());
    }

    @Test
    void shouldSendTheRemoveReasonUrlEncoded() throws Exception
    {
        final FakeAdminServer node = server(200, "{}");

        final PolicyCommandTest.Result result = exempt("remove", "beta-acme", "--reason", "test over: 50% & more+less", "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        assertEquals("DELETE", node.last().method());
        assertEquals("/v1/exemptions/beta-acme", node.last().rawPath());
        assertTrue(node.last().rawQuery().startsWith("reason="), node.last().rawQuery());
        assertFalse(node.last().rawQuery().contains(" "), node.last().rawQuery());
        assertFalse(node.last().rawQuery().contains("&"), node.last().rawQuery());
        assertEquals("test over: 50% & more+less",
            URLDecoder.decode(node.last().rawQuery().substring("reason=".length()), StandardCharsets.UTF_8));
        assertEquals("exemption beta-acme removed\n", result.out());
    }

    @Test
    void shouldRejectARemoveWithoutAReasonBeforeAnyCall() throws Exception
    {
        final FakeAdminServer node = server(200, "{}");

        assertRejectedBeforeAnyCall(exempt("remove", "beta-acme", "--admin", node.address()),
            "limiter exempt: Missing required option: '--reason=R' (see ./limiter exempt remove --help)", node);
        assertRejectedBeforeAnyCall(exempt("remove", "beta-acme", "--reason", " ", "--admin", node.address()),
            "limiter exempt: --reason is empty", node);
    }

    @Test
    void shouldReportAnUnknownExemptionOnOneLine() throws Exception
    {
        final FakeAdminServer node = server(404, "{\"error\":\"no active exemption 'nope'\"}");

        final PolicyCommandTest.Result result = exempt("remove", "nope", "--reason", "r", "--admin", node.address());

        assertOneLineFailure(result, "limiter exempt: no active exemption 'nope' (HTTP 404 from " + node.address() + ")");
        assertEquals(1, result.status());
    }

    @Test
    void shouldReportAMissingSubcommandOrAnUnknownOptionOnOneLine()
    {
        assertOneLineFailure(exempt(), "limiter exempt: say what to do: add, list or remove");
        assertOneLineFailure(exempt("list", "--frobnicate"), "limiter exempt: Unknown option: '--frobnicate'");
    }

    @Test
    void shouldPrintHelpForEverySubcommand()
    {
        for (final String command : List.of("add", "list", "remove"))
        {
            final PolicyCommandTest.Result result = exempt(command, "--help");
            assertEquals(0, result.status(), result.toString());
            assertTrue(result.out().contains("--admin"), result.out());
            assertTrue(result.out().contains("--token"), result.out());
        }
        assertTrue(exempt("add", "--help").out().contains("--expires-in"));
        assertTrue(exempt("--help").out().contains("remove"));
    }
}
