package dev.limiter.cli;

import com.google.gson.JsonElement;
import com.google.gson.JsonParser;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static dev.limiter.cli.PolicyCommandTest.assertOneLineFailure;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(30)
class AuditCommandTest
{
    static final String PAGE = """
        {"records":[
          {"sequence":"1","at":"2026-12-03T09:00:00Z","actor":"bootstrap","action":"POLICIES_BOOTSTRAPPED","reason":"config/policies.json"},
          {"sequence":"2","at":"2026-12-03T10:15:30.5Z","actor":"alice","action":"POLICY_UPDATED","policyId":"orders-api","version":"2",
           "owner":"team-orders","reason":"sale is over","detail":"rate 100 -> 50","addedByANewerNode":1}]}""";

    @TempDir
    Path dir;

    private final List<FakeAdminServer> servers = new ArrayList<>();

    private Map<String, String> env = Map.of(AdminClient.TOKEN_ENVIRONMENT, PolicyCommandTest.TOKEN);

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

    private PolicyCommandTest.Result audit(final String... args)
    {
        return CommandRun.capture(AuditCommand::run, args, env, dir);
    }

    private static Map<String, String> query(final String rawQuery)
    {
        final Map<String, String> parameters = new LinkedHashMap<>();
        for (final String pair : rawQuery.split("&"))
        {
            final int eq = pair.indexOf('=');
            parameters.put(pair.substring(0, eq), URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
        }
        return parameters;
    }

    @Test
    void shouldTurnASinceDurationIntoATimestampThatLongAgo() throws Exception
    {
        final FakeAdminServer node = server(200, PAGE);

        final Instant before = Instant.now();
        final PolicyCommandTest.Result result = audit("--since", "1h", "--admin", node.address());
        final Instant after = Instant.now();

        assertEquals(0, result.status(), result.toString());
        assertEquals("/v1/audit", node.last().rawPath());
        final String since = query(node.last().rawQuery()).get("since");
        assertTrue(since.matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?Z"), since);
        final Instant sent = Instant.parse(since);
        assertTrue(!sent.isBefore(before.minus(Duration.ofHours(1)).minusSeconds(1)) && !sent.isAfter(after.minus(Duration.ofHours(1))),
            since + " is not an hour before " + before);
        assertEquals("Bearer " + PolicyCommandTest.TOKEN, node.last().authorization());
    }

    @Test
    void shouldReadSinceAsAnRfc3339TimeOrHowLongAgo() throws Exception
    {
        final Instant now = Instant.parse("2026-12-03T12:00:00.750Z");

        assertEquals(Instant.parse("2026-12-03T11:30:00Z"), AuditCommand.since("30m", now));
        assertEquals(Instant.parse("2026-12-03T10:29:30Z"), AuditCommand.since("1h30m30s", now));
        assertEquals(Instant.parse("2026-12-01T12:00:00Z"), AuditCommand.since("2d", now));
        assertEquals(Instant.parse("2026-12-03T07:00:00Z"), AuditCommand.since("2026-12-03T09:00:00+02:00", now));
        assertEquals(Instant.parse("2026-12-03T09:00:00.5Z"), AuditCommand.since("2026-12-03T09:00:00.5Z", now));
        assertThrows(AdminClient.Failure.class, () -> AuditCommand.since("yesterday", now));
        assertThrows(AdminClient.Failure.class, () -> AuditCommand.since("1x", now));
        assertThrows(AdminClient.Failure.class, () -> AuditCommand.since("-1h", now));
    }

    @Test
    void shouldPassTheFiltersToTheApi() throws Exception
    {
        final FakeAdminServer node = server(200, PAGE);

        final PolicyCommandTest.Result result = audit("--since", "2026-12-03T09:00:00+01:00", "--policy", "orders-api",
            "--owner", "team orders", "--limit", "20", "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        assertEquals(Map.of("since", "2026-12-03T08:00:00Z", "policy", "orders-api", "owner", "team orders", "limit", "20"),
            query(node.last().rawQuery()));
    }

    @Test
    void shouldAskForEveryRecordWithoutFilters() throws Exception
    {
        final FakeAdminServer node = server(200, PAGE);

        assertEquals(0, audit("--admin", node.address()).status());

        assertEquals("/v1/audit", node.last().rawPath());
        assertNull(node.last().rawQuery());
    }

    @Test
    void shouldPrintTheRecordsAsATable() throws Exception
    {
        final FakeAdminServer node = server(200, PAGE);

        final PolicyCommandTest.Result result = audit("--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        final String[] lines = result.out().split("\n");
        assertEquals(3, lines.length, result.out());
        assertTrue(lines[0].matches("SEQ +AT +ACTOR +ACTION +POLICY +VERSION +OWNER +REASON +DETAIL"), lines[0]);
        assertTrue(lines[1].matches("1 +2026-12-03T09:00:00Z +bootstrap +POLICIES_BOOTSTRAPPED +- +- +- +config/policies.json +-"), lines[1]);
        assertTrue(lines[2].matches("2 +2026-12-03T10:15:30Z +alice +POLICY_UPDATED +orders-api +2 +team-orders +sale is over +rate 100 -> 50"),
            lines[2]);
    }

    @Test
    void shouldSaySoWhenNoRecordMatches() throws Exception
    {
        final FakeAdminServer node = server(200, "{}");

        final PolicyCommandTest.Result result = audit("--policy", "nope", "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        assertEquals("no audit records match\n", result.out());
    }

    @Test
    void shouldPrintExactlyOneJsonDocumentWithJson() throws Exception
    {
        final FakeAdminServer node = server(200, PAGE);

        final PolicyCommandTest.Result result = audit("--json", "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        // parseString refuses anything after the first document.
        final JsonElement printed = JsonParser.parseString(result.out());
        assertEquals(2, printed.getAsJsonObject().getAsJsonArray("records").size());
        assertEquals("rate 100 -> 50", printed.getAsJsonObject().getAsJsonArray("records").get(1).getAsJsonObject().get("detail").getAsString());
    }

    @Test
    void shouldRejectBadFiltersWithoutAnyRequest() throws Exception
    {
        final FakeAdminServer node = server(200, PAGE);

        assertOneLineFailure(audit("--since", "yesterday", "--admin", node.address()), "limiter audit: --since 'yesterday' is neither");
        assertOneLineFailure(audit("--limit", "0", "--admin", node.address()), "limiter audit: --limit must be 1 or more");
        assertOneLineFailure(audit("--limit", "many", "--admin", node.address()), "limiter audit: ");
        assertEquals(0, node.requests.size());
    }

    @Test
    void shouldFailWithOneLineWhenTheTokenIsRejected() throws Exception
    {
        final FakeAdminServer node = server(401, "{\"error\":\"missing or wrong bearer token\"}");

        final PolicyCommandTest.Result result = audit("--token", "wrong-token-0000000", "--admin", node.address());

        assertOneLineFailure(result, "limiter audit: missing or wrong bearer token (HTTP 401 from " + node.address() + "); the token came from --token");
        assertEquals(1, result.status());
    }

    @Test
    void shouldTryTheNextAddressWhenTheFirstIsUnreachable() throws Exception
    {
        final FakeAdminServer node = server(200, PAGE);

        final PolicyCommandTest.Result result = audit("--admin", FakeAdminServer.closedAddress() + "," + node.address());

        assertEquals(0, result.status(), result.toString());
        assertEquals(1, node.requests.size());
    }

    @Test
    void shouldSayHowToProvideATokenWhenThereIsNone() throws Exception
    {
        final FakeAdminServer node = server(200, PAGE);
        env = Map.of();

        assertOneLineFailure(audit("--admin", node.address()), "limiter audit: no admin token: pass --token TOKEN");
        assertEquals(0, node.requests.size());
    }
}
