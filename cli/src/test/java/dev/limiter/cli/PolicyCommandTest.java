package dev.limiter.cli;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.protobuf.util.JsonFormat;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.RollbackRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(30)
class PolicyCommandTest
{
    static final String TOKEN = "0123456789abcdef0123456789abcdef";

    static final String POLICY_SET = """
        {"version":"7",
         "policies":[{"id":"orders-api","selector":{"tenant":"acme","route":"/v1/orders/{id}"},"rate":"100","period":"1s",
                      "burst":"200","scope":"TENANT","version":"3","owner":"team-orders","reason":"sale","consistency":"STRICT",
                      "someFieldFromANewerNode":true}],
         "defaultPolicy":{"id":"default","rate":"1000","version":"1"},
         "anotherNewField":{"x":1}}""";

    static final String CHANGE = """
        {"version":{"policy":{"id":"orders-api","rate":"50","version":"3"},"actor":"alice","createdAt":"2026-12-03T09:00:00Z"},
         "setVersion":"7"}""";

    @TempDir
    Path dir;

    Map<String, String> env = Map.of(AdminClient.TOKEN_ENVIRONMENT, TOKEN);

    private final List<FakeAdminServer> servers = new ArrayList<>();

    record Result(int status, String out, String err)
    {
    }

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

    private Result policy(final String... args)
    {
        return CommandRun.capture(PolicyCommand::run, args, env, dir);
    }

    /** A failure is reported as exactly one line, starting with the command's name. */
    static void assertOneLineFailure(final Result result, final String prefix)
    {
        assertTrue(result.status() != 0, result.toString());
        assertEquals("", result.out(), result.toString());
        assertTrue(result.err().startsWith(prefix), result.err());
        assertTrue(result.err().endsWith("\n"), result.err());
        assertEquals(1, result.err().split("\n", -1).length - 1, "one line: " + result.err());
    }

    private Path file(final String name, final String content) throws Exception
    {
        return Files.writeString(dir.resolve(name), content);
    }

    @Test
    void shouldSendTheTokenAndTheActorAndPrintATable() throws Exception
    {
        final FakeAdminServer node = server(200, POLICY_SET);

        final Result result = policy("list", "--admin", node.address(), "--actor", "alice");

        assertEquals(0, result.status(), result.toString());
        final FakeAdminServer.Seen seen = node.last();
        assertEquals("GET", seen.method());
        assertEquals("/v1/policies", seen.rawPath());
        assertEquals("Bearer " + TOKEN, seen.authorization());
        assertEquals("alice", seen.actor());
        final String[] lines = result.out().split("\n");
        assertTrue(lines[0].matches("ID +VERSION +OWNER +RATE +BURST +SCOPE +MODE +CONSISTENCY +SELECTOR"), lines[0]);
        assertTrue(lines[1].matches("orders-api +3 +team-orders +100/1s +200 +TENANT +ENFORCE +STRICT +tenant=acme route=/v1/orders/\\{id}"),
            lines[1]);
        assertTrue(lines[2].matches("default +1 +- +1000/1s +1000 +TENANT +ENFORCE +FAST +\\(default: .*\\)"), lines[2]);
        assertEquals("policy set version 7, 2 policies (the default included)", lines[3]);
        assertEquals("", result.err());
    }

    @Test
    void shouldTryTheNextAddressWhenANodeIsNotTheLeader() throws Exception
    {
        final FakeAdminServer follower = server(421, "{\"error\":\"not the leader\",\"leader\":\"n2\"}");
        final FakeAdminServer leader = server(200, CHANGE);
        final Path policyFile = file("orders.json", "{\"id\":\"orders-api\",\"rate\":50,\"reason\":\"sale is over\"}");

        final Result result = policy("put", "--file", policyFile.toString(), "--admin", follower.address() + "," + leader.address());

        assertEquals(0, result.status(), result.toString());
        assertEquals(1, follower.requests.size());
        assertEquals(1, leader.requests.size());
        assertEquals("PUT", leader.last().method());
        assertEquals("/v1/policies/orders-api", leader.last().rawPath());
        assertEquals("policy orders-api version 3 in force (set version 7)\n", result.out());
    }

    @Test
    void shouldReportEveryNodeWhenNoneIsTheLeader() throws Exception
    {
        final FakeAdminServer first = server(421, "{\"error\":\"not the leader\",\"leader\":\"n3\"}");
        final FakeAdminServer second = server(421, "{\"error\":\"not the leader\"}");

        final Result result = policy("delete", "orders-api", "--reason", "gone", "--admin", first.address() + "," + second.address());

        assertOneLineFailure(result, "limiter policy: ");
        assertEquals(1, result.status());
        assertTrue(result.err().contains(first.address() + " is not the leader (leader: n3)"), result.err());
        assertTrue(result.err().contains(second.address() + " is not the leader"), result.err());
    }

    @Test
    void shouldSkipAnAddressThatRefusesTheConnection() throws Exception
    {
        final FakeAdminServer node = server(200, POLICY_SET);

        final Result result = policy("list", "--admin", FakeAdminServer.closedAddress() + "," + node.address());

        assertEquals(0, result.status(), result.toString());
        assertEquals(1, node.requests.size());
    }

    @Test
    void shouldSkipAnAddressThatDoesNotAnswerInTime() throws Exception
    {
        final FakeAdminServer hung = server(200, POLICY_SET).hang();
        final FakeAdminServer node = server(200, POLICY_SET);

        final Result result = policy("list", "--timeout-ms", "300", "--admin", hung.address() + "," + node.address());

        assertEquals(0, result.status(), result.toString());
        assertEquals(1, node.requests.size());
    }

    @Test
    void shouldNotPassAChangeOnAfterANodeTookItButDidNotAnswerInTime() throws Exception
    {
        final FakeAdminServer hung = server(200, CHANGE).hang();
        final FakeAdminServer node = server(200, CHANGE);

        final Result result = policy("rollback", "orders-api", "--to", "1", "--reason", "r", "--timeout-ms", "300",
            "--admin", hung.address() + "," + node.address());

        assertEquals(1, result.status(), result.toString());
        assertTrue(result.err().contains("may or may not have been applied"), result.err());
        assertEquals(0, node.requests.size(), "a rollback sent twice would make two versions");
    }

    @Test
    void shouldFailWithOneLineWhenNoAddressAnswers() throws Exception
    {
        final String first = FakeAdminServer.closedAddress();
        final String second = FakeAdminServer.closedAddress();

        final Result result = policy("list", "--admin", first + "," + second);

        assertOneLineFailure(result, "limiter policy: no admin endpoint answered");
        assertTrue(result.err().contains(first + " refused the connection"), result.err());
        assertTrue(result.err().contains("./limiter cluster"), result.err());
    }

    @Test
    void shouldTakeAnAnswerOtherThanNotLeaderAsFinal() throws Exception
    {
        final FakeAdminServer unavailable = server(503, "{\"error\":\"no leader: the change was not committed\"}");
        final FakeAdminServer next = server(200, CHANGE);

        final Result result = policy("rollback", "orders-api", "--to", "2", "--reason", "r",
            "--admin", unavailable.address() + "," + next.address());

        assertOneLineFailure(result, "limiter policy: no leader: the change was not committed (HTTP 503 from " + unavailable.address());
        assertEquals(0, next.requests.size());
    }

    @Test
    void shouldFailWithOneLineWhenTheTokenIsRejected() throws Exception
    {
        final FakeAdminServer node = server(401, "{\"error\":\"missing or wrong bearer token\"}");

        final Result result = policy("get", "orders-api", "--admin", node.address());

        assertOneLineFailure(result, "limiter policy: missing or wrong bearer token (HTTP 401 from " + node.address() + ")");
        assertEquals(1, result.status());
        assertTrue(result.err().contains("the token came from " + AdminClient.TOKEN_ENVIRONMENT), result.err());
        assertTrue(result.err().contains("--token"), result.err());
    }

    @Test
    void shouldPrintEveryFieldErrorOfARejectedPolicy() throws Exception
    {
        final FakeAdminServer node = server(400, """
            {"error":"invalid policy orders-api; nothing was changed","errors":["rate: must be at least 1","burst: must be at least rate"]}""");
        final Path policyFile = file("orders.json", "{\"id\":\"orders-api\",\"burst\":3}");

        final Result result = policy("put", "--file", policyFile.toString(), "--reason", "try", "--admin", node.address());

        assertOneLineFailure(result, "limiter policy: invalid policy orders-api; nothing was changed: " +
            "rate: must be at least 1; burst: must be at least rate (HTTP 400 from " + node.address() + ")");
        assertEquals(1, result.status());
    }

    @Test
    void shouldFailWithOneLineForAnUnknownPolicy() throws Exception
    {
        final FakeAdminServer node = server(404, "{\"error\":\"no policy 'nope'\"}");

        final Result result = policy("history", "nope", "--admin", node.address());

        assertOneLineFailure(result, "limiter policy: no policy 'nope' (HTTP 404 from " + node.address() + ")");
        assertEquals("/v1/policies/nope/history", node.last().rawPath());
    }

    @Test
    void shouldPrintExactlyOneJsonDocumentWithJson() throws Exception
    {
        final FakeAdminServer node = server(200, POLICY_SET);

        final Result result = policy("list", "--json", "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        // parseString refuses anything after the first document.
        final JsonElement printed = JsonParser.parseString(result.out());
        assertEquals("7", printed.getAsJsonObject().get("version").getAsString());
        assertEquals("orders-api", printed.getAsJsonObject().getAsJsonArray("policies").get(0).getAsJsonObject().get("id").getAsString());
        assertEquals("team-orders", printed.getAsJsonObject().getAsJsonArray("policies").get(0).getAsJsonObject().get("owner").getAsString());
        assertEquals("default", printed.getAsJsonObject().getAsJsonObject("defaultPolicy").get("id").getAsString());
        assertTrue(result.out().endsWith("}\n"), result.out());
    }

    @Test
    void shouldPrintTheChangeResultAsJsonWithJson() throws Exception
    {
        final FakeAdminServer node = server(200, CHANGE);

        final Result result = policy("delete", "orders-api", "--reason", "unused", "--json", "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        assertEquals("7", JsonParser.parseString(result.out()).getAsJsonObject().get("setVersion").getAsString());
    }

    @Test
    void shouldPrintTheHistoryWithRollbacksAndDeletions() throws Exception
    {
        final FakeAdminServer node = server(200, """
            {"id":"orders-api","versions":[
              {"policy":{"id":"orders-api","rate":"100","version":"1","owner":"team-orders","reason":"first"},"actor":"alice",
               "createdAt":"2026-12-03T09:00:00.250Z"},
              {"policy":{"id":"orders-api","rate":"50","period":"60s","version":"2","owner":"team-orders","reason":"too much"},"actor":"bob",
               "createdAt":"2026-12-03T10:00:00Z"},
              {"policy":{"id":"orders-api","rate":"100","version":"3","owner":"team-orders","reason":"back"},"actor":"carol",
               "createdAt":"2026-12-03T11:00:00Z","rolledBackFrom":"1"},
              {"policy":{"id":"orders-api","version":"4","reason":"retired"},"actor":"dave","createdAt":"2026-12-03T12:00:00Z","deleted":true}]}""");

        final Result result = policy("history", "orders-api", "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        final String[] lines = result.out().split("\n");
        assertEquals(5, lines.length, result.out());
        assertTrue(lines[0].matches("VERSION +CREATED +ACTOR +OWNER +RATE +BURST +NOTE +REASON"), lines[0]);
        assertTrue(lines[1].matches("1 +2026-12-03T09:00:00Z +alice +team-orders +100/1s +100 +- +first"), lines[1]);
        assertTrue(lines[2].matches("2 +2026-12-03T10:00:00Z +bob +team-orders +50/1m +50 +- +too much"), lines[2]);
        assertTrue(lines[3].matches("3 +2026-12-03T11:00:00Z +carol +team-orders +100/1s +100 +rollback of v1 +back"), lines[3]);
        assertTrue(lines[4].matches("4 +2026-12-03T12:00:00Z +dave +- +- +- +deleted +retired"), lines[4]);
    }

    @Test
    void shouldShowOnePolicyFieldByField() throws Exception
    {
        final FakeAdminServer node = server(200, """
            {"id":"orders-api","rate":"5","period":"0.5s","version":"3","owner":"team-orders","mode":"SHADOW","priority":2,
             "selector":{"method":"GET"},"reason":"watch first"}""");

        final Result result = policy("get", "orders-api", "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        assertEquals("/v1/policies/orders-api", node.last().rawPath());
        assertTrue(result.out().contains("RATE            5/500ms\n"), result.out());
        assertTrue(result.out().contains("MODE            SHADOW\n"), result.out());
        assertTrue(result.out().contains("SELECTOR        method=GET\n"), result.out());
        assertTrue(result.out().contains("REASON          watch first\n"), result.out());
    }

    @Test
    void shouldShowAPolicysLimitKindsExtraLimitsAndExcess() throws Exception
    {
        final FakeAdminServer node = server(200, """
            {"id":"reports","rate":"10000","algorithm":"FIXED_WINDOW","calendarWindow":"MONTH","owner":"billing",
             "limits":[{"rate":"100","period":"60s","algorithm":"SLIDING_WINDOW"},{"rate":"5","burst":"10"}],
             "excess":"SOFT_OVERAGE","overagePercent":10,"reason":"plan quota"}""");

        final Result result = policy("get", "reports", "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        assertTrue(result.out().contains("RATE            10000/month\n"), result.out());
        assertTrue(result.out().contains("ALGORITHM       FIXED_WINDOW\n"), result.out());
        assertTrue(result.out().contains("MORE LIMITS     100/1m SLIDING_WINDOW, 5/1s TOKEN_BUCKET burst 10\n"), result.out());
        assertTrue(result.out().contains("EXCESS          SOFT_OVERAGE 10%\n"), result.out());
    }

    @Test
    void shouldLetTheOptionsOverrideTheFilesOwnerAndReason() throws Exception
    {
        final FakeAdminServer node = server(200, CHANGE);
        final Path policyFile = file("orders.json", """
            {"id":"orders-api","rate":50,"owner":"file-owner","reason":"file reason","selector":{"tenant":"acme"}}""");

        final Result result = policy("put", "--file", policyFile.toString(), "--owner", "team-orders", "--reason", "sale is over",
            "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        assertEquals("application/json", node.last().contentType());
        final Policy.Builder sent = Policy.newBuilder();
        JsonFormat.parser().merge(node.last().body(), sent);
        assertEquals("orders-api", sent.getId());
        assertEquals(50, sent.getRate());
        assertEquals("acme", sent.getSelector().getTenant());
        assertEquals("team-orders", sent.getOwner());
        assertEquals("sale is over", sent.getReason());
    }

    @Test
    void shouldRejectAMissingFileWithoutAnyRequest() throws Exception
    {
        final FakeAdminServer node = server(200, CHANGE);

        final Result result = policy("put", "--file", dir.resolve("nope.json").toString(), "--reason", "r", "--admin", node.address());

        assertOneLineFailure(result, "limiter policy: cannot read ");
        assertTrue(result.err().contains("no such file"), result.err());
        assertEquals(2, result.status());
        assertEquals(0, node.requests.size());
    }

    @Test
    void shouldRejectAFileThatIsNotPolicyJsonWithoutAnyRequest() throws Exception
    {
        final FakeAdminServer node = server(200, CHANGE);
        final Path broken = file("broken.json", "{\"id\":\"orders-api\",\"rate\":");
        final Path typo = file("typo.json", "{\"id\":\"orders-api\",\"brust\":5}");
        final Path set = file("set.json", "{\"policies\":[{\"id\":\"orders-api\"}]}");
        final Path noId = file("no-id.json", "{\"rate\":5}");
        final Path hours = file("hours.json", "{\"id\":\"orders-api\",\"rate\":5,\"period\":\"2h\"}");
        final Path date = file("date.json", "{\"id\":\"orders-api\",\"rate\":5,\"effectiveFrom\":\"2026-12-07 09:00\"}");

        final Result brokenResult = policy("put", "--file", broken.toString(), "--reason", "r", "--admin", node.address());
        final Result typoResult = policy("put", "--file", typo.toString(), "--reason", "r", "--admin", node.address());
        final Result setResult = policy("put", "--file", set.toString(), "--reason", "r", "--admin", node.address());
        final Result noIdResult = policy("put", "--file", noId.toString(), "--reason", "r", "--admin", node.address());

        assertOneLineFailure(brokenResult, "limiter policy: " + broken + " is not one policy in protobuf JSON");
        assertOneLineFailure(typoResult, "limiter policy: " + typo + " is not one policy in protobuf JSON");
        assertTrue(typoResult.err().contains("brust"), typoResult.err());
        assertOneLineFailure(setResult, "limiter policy: " + set + " is not one policy in protobuf JSON");
        assertTrue(setResult.err().contains("policy set"), setResult.err());
        assertOneLineFailure(noIdResult, "limiter policy: " + noId + " has no \"id\"");
        // Durations and times are written as protobuf JSON has them: the message says how.
        final Result hoursResult = policy("put", "--file", hours.toString(), "--reason", "r", "--admin", node.address());
        assertOneLineFailure(hoursResult, "limiter policy: " + hours + " is not one policy in protobuf JSON: Failed to parse duration: \"2h\"" +
            " (a duration is seconds with an 's': \"60s\", \"0.5s\", \"7200s\" for 2 hours)");
        final Result dateResult = policy("put", "--file", date.toString(), "--reason", "r", "--admin", node.address());
        assertOneLineFailure(dateResult, "limiter policy: " + date + " is not one policy in protobuf JSON: Failed to parse timestamp");
        assertTrue(dateResult.err().contains("(a time is RFC 3339 in UTC or with an offset: \"2026-12-07T09:00:00Z\")"), dateResult.err());
        assertEquals(0, node.requests.size());
    }

    @Test
    void shouldRejectAChangeWithoutAReasonWithoutAnyRequest() throws Exception
    {
        final FakeAdminServer node = server(200, CHANGE);
        final Path noReason = file("orders.json", "{\"id\":\"orders-api\",\"rate\":50}");

        final Result put = policy("put", "--file", noReason.toString(), "--admin", node.address());
        final Result delete = policy("delete", "orders-api", "--admin", node.address());
        final Result blank = policy("rollback", "orders-api", "--to", "1", "--reason", " ", "--admin", node.address());

        assertOneLineFailure(put, "limiter policy: no reason given: pass --reason");
        assertOneLineFailure(delete, "limiter policy: Missing required option: '--reason=R' (see ./limiter policy delete --help)");
        assertOneLineFailure(blank, "limiter policy: --reason is empty");
        assertEquals(2, put.status());
        assertEquals(2, delete.status());
        assertEquals(0, node.requests.size());
    }

    @Test
    void shouldRejectARollbackToVersionZeroWithoutAnyRequest() throws Exception
    {
        final FakeAdminServer node = server(200, CHANGE);

        final Result zero = policy("rollback", "orders-api", "--to", "0", "--reason", "r", "--admin", node.address());
        final Result notANumber = policy("rollback", "orders-api", "--to", "two", "--reason", "r", "--admin", node.address());

        assertOneLineFailure(zero, "limiter policy: --to must be a version number, 1 or more");
        assertOneLineFailure(notANumber, "limiter policy: ");
        assertTrue(notANumber.err().contains("'two'"), notANumber.err());
        assertEquals(0, node.requests.size());
    }

    @Test
    void shouldTakeAnAdminAddressWithOrWithoutHttpAndRejectOneWithoutPort() throws Exception
    {
        final FakeAdminServer node = server(200, POLICY_SET);

        assertEquals(0, policy("list", "--admin", "http://" + node.address() + "/").status());
        assertOneLineFailure(policy("list", "--admin", "127.0.0.1"), "limiter policy: --admin '127.0.0.1' is not HOST:PORT");
        assertEquals(1, node.requests.size());
    }

    @Test
    void shouldReportAnUnknownOptionOrAMissingSubcommandOnOneLine()
    {
        assertOneLineFailure(policy("list", "--frobnicate"), "limiter policy: Unknown option: '--frobnicate'");
        assertOneLineFailure(policy(), "limiter policy: say what to do: put, get, list");
    }

    @Test
    void shouldPrintHelpForEverySubcommand()
    {
        for (final String command : List.of("put", "get", "list", "history", "rollout", "rollback", "delete"))
        {
            final Result result = policy(command, "--help");
            assertEquals(0, result.status(), result.toString());
            assertTrue(result.out().contains("--admin"), result.out());
            assertTrue(result.out().contains("--token"), result.out());
        }
        assertTrue(policy("--help").out().contains("rollback"));
        assertTrue(policy("--help").out().contains("rollout"));
    }

    @Test
    void shouldSendARollbackAsAPost() throws Exception
    {
        final FakeAdminServer node = server(200, """
            {"version":{"policy":{"id":"orders-api","rate":"100","version":"4"},"rolledBackFrom":"2"},"setVersion":"9"}""");

        final Result result = policy("rollback", "orders-api", "--to", "2", "--reason", "v3 denied too much", "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        assertEquals("POST", node.last().method());
        assertEquals("/v1/policies/orders-api/rollback", node.last().rawPath());
        final RollbackRequest.Builder sent = RollbackRequest.newBuilder();
        JsonFormat.parser().merge(node.last().body(), sent);
        assertEquals(2, sent.getToVersion());
        assertEquals("v3 denied too much", sent.getReason());
        assertEquals("policy orders-api version 4 in force, a copy of version 2 (set version 9)\n", result.out());
    }

    @Test
    void shouldSendTheDeleteReasonUrlEncoded() throws Exception
    {
        final FakeAdminServer node = server(200, """
            {"version":{"policy":{"id":"orders-api","version":"5"},"deleted":true},"setVersion":"10"}""");

        final Result result = policy("delete", "orders-api", "--reason", "50% & more+less", "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        assertEquals("DELETE", node.last().method());
        assertEquals("/v1/policies/orders-api", node.last().rawPath());
        assertTrue(node.last().rawQuery().startsWith("reason="), node.last().rawQuery());
        assertFalse(node.last().rawQuery().contains(" "), node.last().rawQuery());
        assertEquals("50% & more+less", URLDecoder.decode(node.last().rawQuery().substring("reason=".length()), StandardCharsets.UTF_8));
        assertEquals("policy orders-api deleted at version 5 (set version 10)\n", result.out());
    }

    // ---- policy rollout: each step a new version that the listed tenants and a stable share of all get ----

    /** v3 enforced before the rollout; v4 its first step: 10% plus two tenants, the others in shadow. */
    static final String ROLLOUT_HISTORY = """
        {"id":"orders-api","versions":[
          {"policy":{"id":"orders-api","rate":"100","version":"3","owner":"team-orders","reason":"sale",
                     "selector":{"route":"/v1/orders/{id}"}},"actor":"alice","createdAt":"2026-12-03T09:00:00Z"},
          {"policy":{"id":"orders-api","rate":"50","burst":"80","version":"4","owner":"team-orders","reason":"canary",
                     "selector":{"route":"/v1/orders/{id}"},"effectiveFrom":"2026-12-03T10:00:00Z",
                     "rollout":{"tenants":["acme","globex"],"percent":10,"othersInShadow":true,
                                "fallback":{"id":"orders-api","rate":"100","version":"3"}}},
           "actor":"bob","createdAt":"2026-12-03T10:00:00Z"}]}""";

    static final String ROLLOUT_CHANGE = """
        {"version":{"policy":{"id":"orders-api","rate":"50","burst":"80","version":"5",
                              "rollout":{"tenants":["acme","globex"],"percent":25,"othersInShadow":true,
                                         "fallback":{"id":"orders-api","rate":"100","version":"3"}}},
                    "actor":"carol"},
         "setVersion":"12"}""";

    private FakeAdminServer rolloutNode(final String history, final String change) throws Exception
    {
        return server(500, "{\"error\":\"unexpected call\"}")
            .answer("GET", "/v1/policies/orders-api/history", 200, history)
            .answer("PUT", "/v1/policies/orders-api", 200, change);
    }

    private static Policy sentPolicy(final FakeAdminServer.Seen seen) throws Exception
    {
        final Policy.Builder sent = Policy.newBuilder();
        JsonFormat.parser().merge(seen.body(), sent);
        return sent.build();
    }

    /**
     * The version sent is the one the step was read from (the node refuses the step with 409 if the
     * policy changed since); the fallback (the cluster sets it) is never sent.
     */
    private static void assertBasedOnAndNoFallback(final FakeAdminServer.Seen seen, final String basedOn)
    {
        final JsonObject body = JsonParser.parseString(seen.body()).getAsJsonObject();
        assertEquals(basedOn, body.has("version") ? body.get("version").getAsString() : null, seen.body());
        assertFalse(body.has("rollout") && body.getAsJsonObject("rollout").has("fallback"), seen.body());
        assertFalse(seen.body().contains("fallback"), seen.body());
    }

    @Test
    void shouldTakeTheNextRolloutStepFromTheHistoryKeepingTheLimitsAndTenantsAndChangingThePercent() throws Exception
    {
        final FakeAdminServer node = rolloutNode(ROLLOUT_HISTORY, ROLLOUT_CHANGE);

        final Result result = policy("rollout", "orders-api", "--percent", "25", "--reason", "step 2", "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        assertEquals(2, node.requests.size());
        assertEquals("GET", node.requests.get(0).method());
        assertEquals("/v1/policies/orders-api/history", node.requests.get(0).rawPath());
        assertEquals("PUT", node.last().method());
        assertEquals("/v1/policies/orders-api", node.last().rawPath());
        final Policy sent = sentPolicy(node.last());
        assertEquals("orders-api", sent.getId());
        assertEquals(50, sent.getRate());
        assertEquals(80, sent.getBurst());
        assertEquals("/v1/orders/{id}", sent.getSelector().getRoute());
        assertEquals("team-orders", sent.getOwner());
        assertEquals("step 2", sent.getReason());
        assertFalse(sent.hasEffectiveFrom(), "a step takes effect now: " + node.last().body());
        assertEquals(List.of("acme", "globex"), sent.getRollout().getTenantsList());
        assertEquals(25, sent.getRollout().getPercent());
        assertTrue(sent.getRollout().getOthersInShadow(), "--others defaults to the previous step's");
        assertBasedOnAndNoFallback(node.last(), "4");
        assertEquals("policy orders-api version 5 rolling out: 25% of tenants + 2 listed (others on version 3, in shadow)\n",
            result.out());
        assertEquals("", result.err());
    }

    @Test
    void shouldReplaceTheTenantsAndTheShadowSettingOfTheLastStepWhenGiven() throws Exception
    {
        final FakeAdminServer node = rolloutNode(ROLLOUT_HISTORY, """
            {"version":{"policy":{"id":"orders-api","rate":"50","version":"5",
                                  "rollout":{"tenants":["initech"],"percent":50,"fallback":{"version":"3"}}}},"setVersion":"12"}""");

        final Result result = policy("rollout", "orders-api", "--percent", "50", "--tenant", "initech", "--others", "previous",
            "--reason", "step 3", "--owner", "team-checkout", "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        final Policy sent = sentPolicy(node.last());
        assertEquals(List.of("initech"), sent.getRollout().getTenantsList());
        assertFalse(sent.getRollout().getOthersInShadow());
        assertEquals("team-checkout", sent.getOwner());
        assertEquals("policy orders-api version 5 rolling out: 50% of tenants + 1 listed (others on version 3)\n", result.out());
    }

    @Test
    void shouldStartARolloutWithTheLimitsOfTheFile() throws Exception
    {
        final FakeAdminServer node = rolloutNode(ROLLOUT_HISTORY, """
            {"version":{"policy":{"id":"orders-api","rate":"40","version":"4",
                                  "rollout":{"tenants":["acme"],"percent":10,"othersInShadow":true}}},"setVersion":"11"}""");
        final Path policyFile = file("orders.json", """
            {"rate":40,"burst":60,"owner":"team-orders","reason":"file reason","selector":{"route":"/v1/orders/{id}"}}""");

        final Result result = policy("rollout", "orders-api", "--file", policyFile.toString(), "--percent", "10", "--tenant", "acme",
            "--others", "shadow", "--reason", "canary the new burst", "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        assertEquals(1, node.requests.size(), "a first step needs no history: " + node.requests);
        assertEquals("PUT", node.last().method());
        assertEquals("/v1/policies/orders-api", node.last().rawPath());
        final Policy sent = sentPolicy(node.last());
        assertEquals("orders-api", sent.getId());
        assertEquals(40, sent.getRate());
        assertEquals(60, sent.getBurst());
        assertEquals("/v1/orders/{id}", sent.getSelector().getRoute());
        assertEquals("team-orders", sent.getOwner());
        assertEquals("canary the new burst", sent.getReason());
        assertEquals(List.of("acme"), sent.getRollout().getTenantsList());
        assertEquals(10, sent.getRollout().getPercent());
        assertTrue(sent.getRollout().getOthersInShadow());
        // No fallback in the answer: that part is left out.
        assertEquals("policy orders-api version 4 rolling out: 10% of tenants + 1 listed (others in shadow)\n", result.out());
    }

    @Test
    void shouldStartARolloutWithTheOthersOnThePreviousVersionByDefault() throws Exception
    {
        final FakeAdminServer node = rolloutNode(ROLLOUT_HISTORY, """
            {"version":{"policy":{"id":"orders-api","rate":"40","version":"4","rollout":{"percent":5}}},"setVersion":"11"}""");
        final Path policyFile = file("orders.json", "{\"id\":\"orders-api\",\"rate\":40}");

        final Result result = policy("rollout", "orders-api", "--file", policyFile.toString(), "--percent", "5", "--reason", "r",
            "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        final Policy sent = sentPolicy(node.last());
        assertTrue(sent.hasRollout());
        assertEquals(0, sent.getRollout().getTenantsCount());
        assertFalse(sent.getRollout().getOthersInShadow());
        assertEquals("policy orders-api version 4 rolling out: 5% of tenants\n", result.out());
    }

    @Test
    void shouldSendNoRolloutAtOneHundredPercentWithoutTenants() throws Exception
    {
        final FakeAdminServer node = rolloutNode(ROLLOUT_HISTORY, """
            {"version":{"policy":{"id":"orders-api","rate":"50","burst":"80","version":"6"}},"setVersion":"13"}""");

        final Result result = policy("rollout", "orders-api", "--percent", "100", "--reason", "all good", "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        final Policy sent = sentPolicy(node.last());
        assertFalse(sent.hasRollout(), node.last().body());
        assertFalse(node.last().body().contains("rollout"), node.last().body());
        assertEquals(50, sent.getRate());
        assertEquals(80, sent.getBurst());
        assertEquals("/v1/orders/{id}", sent.getSelector().getRoute());
        assertBasedOnAndNoFallback(node.last(), "4");
        assertEquals("policy orders-api version 6 in force for every tenant (rollout complete)\n", result.out());
    }

    @Test
    void shouldSendTheVersionItWasBasedOnButNeverTheFallback() throws Exception
    {
        final FakeAdminServer node = rolloutNode(ROLLOUT_HISTORY, ROLLOUT_CHANGE);
        // As ./limiter policy get --json prints a version being rolled out: with its number and fallback.
        final Path policyFile = file("orders.json", """
            {"id":"orders-api","rate":40,"version":"9",
             "rollout":{"tenants":["acme"],"percent":5,"othersInShadow":true,"fallback":{"id":"orders-api","rate":"100","version":"3"}}}""");

        final Result fromFile = policy("rollout", "orders-api", "--file", policyFile.toString(), "--percent", "20", "--reason", "r",
            "--admin", node.address());
        final FakeAdminServer.Seen first = node.last();
        final Result fromHistory = policy("rollout", "orders-api", "--percent", "30", "--tenant", "acme", "--reason", "r",
            "--admin", node.address());
        final FakeAdminServer.Seen second = node.last();

        assertEquals(0, fromFile.status(), fromFile.toString());
        assertEquals(0, fromHistory.status(), fromHistory.toString());
        assertEquals("PUT", first.method());
        assertEquals("PUT", second.method());
        assertBasedOnAndNoFallback(first, "9");
        assertBasedOnAndNoFallback(second, "4");
        // The options make the file's rollout: the file's tenants and shadow setting are not kept.
        assertEquals(20, sentPolicy(first).getRollout().getPercent());
        assertEquals(0, sentPolicy(first).getRollout().getTenantsCount());
        assertFalse(sentPolicy(first).getRollout().getOthersInShadow());
        assertEquals(30, sentPolicy(second).getRollout().getPercent());
    }

    @Test
    void shouldPrintTheRolloutChangeResultAsJsonWithJson() throws Exception
    {
        final FakeAdminServer node = rolloutNode(ROLLOUT_HISTORY, ROLLOUT_CHANGE);

        final Result result = policy("rollout", "orders-api", "--percent", "25", "--reason", "r", "--json", "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        final JsonObject printed = JsonParser.parseString(result.out()).getAsJsonObject();
        assertEquals("12", printed.get("setVersion").getAsString());
        assertEquals(25, printed.getAsJsonObject("version").getAsJsonObject("policy").getAsJsonObject("rollout").get("percent").getAsInt());
    }

    @Test
    void shouldRejectBadRolloutOptionsWithoutAnyRequest() throws Exception
    {
        final FakeAdminServer node = rolloutNode(ROLLOUT_HISTORY, ROLLOUT_CHANGE);
        final Path otherPolicy = file("other.json", "{\"id\":\"payments-api\",\"rate\":5}");
        final Path typo = file("typo.json", "{\"id\":\"orders-api\",\"brust\":5}");

        final Result tooMuch = policy("rollout", "orders-api", "--percent", "101", "--reason", "r", "--admin", node.address());
        final Result negative = policy("rollout", "orders-api", "--percent", "-1", "--reason", "r", "--admin", node.address());
        final Result notANumber = policy("rollout", "orders-api", "--percent", "half", "--reason", "r", "--admin", node.address());
        final Result noPercent = policy("rollout", "orders-api", "--reason", "r", "--admin", node.address());
        final Result noReason = policy("rollout", "orders-api", "--percent", "25", "--admin", node.address());
        final Result blankReason = policy("rollout", "orders-api", "--percent", "25", "--reason", " ", "--admin", node.address());
        final Result badOthers = policy("rollout", "orders-api", "--percent", "25", "--others", "sideways", "--reason", "r",
            "--admin", node.address());
        final Result blankTenant = policy("rollout", "orders-api", "--percent", "25", "--tenant", " ", "--reason", "r",
            "--admin", node.address());
        final Result wrongId = policy("rollout", "orders-api", "--file", otherPolicy.toString(), "--percent", "25", "--reason", "r",
            "--admin", node.address());
        final Result typoFile = policy("rollout", "orders-api", "--file", typo.toString(), "--percent", "25", "--reason", "r",
            "--admin", node.address());

        assertOneLineFailure(tooMuch, "limiter policy: --percent must be 0 to 100, was 101");
        assertOneLineFailure(negative, "limiter policy: --percent must be 0 to 100, was -1");
        assertOneLineFailure(notANumber, "limiter policy: ");
        assertOneLineFailure(noPercent, "limiter policy: Missing required option: '--percent=N'");
        assertOneLineFailure(noReason, "limiter policy: Missing required option: '--reason=R'");
        assertOneLineFailure(blankReason, "limiter policy: --reason is empty");
        assertOneLineFailure(badOthers, "limiter policy: --others must be shadow or previous, was 'sideways'");
        assertOneLineFailure(blankTenant, "limiter policy: --tenant is empty");
        assertOneLineFailure(wrongId, "limiter policy: " + otherPolicy + " holds policy 'payments-api', not 'orders-api'");
        assertOneLineFailure(typoFile, "limiter policy: " + typo + " is not one policy in protobuf JSON");
        for (final Result result : List.of(tooMuch, negative, notANumber, noPercent, noReason, blankReason, badOthers, blankTenant,
            wrongId, typoFile))
        {
            assertEquals(2, result.status(), result.toString());
        }
        assertEquals(0, node.requests.size(), "nothing may be sent: " + node.requests);
    }

    @Test
    void shouldFailWithOneLineWhenThePolicyIsNotBeingRolledOutAndNoFileIsGiven() throws Exception
    {
        final FakeAdminServer node = rolloutNode("""
            {"id":"orders-api","versions":[
              {"policy":{"id":"orders-api","rate":"100","version":"3","reason":"sale"},"actor":"alice"}]}""", ROLLOUT_CHANGE);

        final Result result = policy("rollout", "orders-api", "--percent", "25", "--reason", "r", "--admin", node.address());

        assertOneLineFailure(result, "limiter policy: policy orders-api is not being rolled out");
        assertEquals(1, result.status());
        assertTrue(result.err().contains("start a rollout with --file"), result.err());
        assertEquals(1, node.requests.size());
        assertEquals("GET", node.last().method());
    }

    @Test
    void shouldTakeTheStepAfterTheNewestVersionThatIsNotADeletion() throws Exception
    {
        final FakeAdminServer node = rolloutNode("""
            {"id":"orders-api","versions":[
              {"policy":{"id":"orders-api","rate":"50","version":"4","rollout":{"tenants":["acme"],"percent":10}}},
              {"policy":{"id":"orders-api","version":"5","reason":"retired"},"deleted":true}]}""", ROLLOUT_CHANGE);

        final Result result = policy("rollout", "orders-api", "--percent", "20", "--reason", "r", "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        final Policy sent = sentPolicy(node.last());
        assertEquals(50, sent.getRate());
        assertEquals(List.of("acme"), sent.getRollout().getTenantsList());
    }

    @Test
    void shouldNotPassARolloutStepOnAfterANodeTookItButDidNotAnswerInTime() throws Exception
    {
        final FakeAdminServer hung = server(200, ROLLOUT_CHANGE).hang();
        final FakeAdminServer node = rolloutNode(ROLLOUT_HISTORY, ROLLOUT_CHANGE);
        final Path policyFile = file("orders.json", "{\"id\":\"orders-api\",\"rate\":40}");

        final Result result = policy("rollout", "orders-api", "--file", policyFile.toString(), "--percent", "10", "--reason", "r",
            "--timeout-ms", "300", "--admin", hung.address() + "," + node.address());

        assertOneLineFailure(result, "limiter policy: ");
        assertEquals(1, result.status());
        assertTrue(result.err().contains("may or may not have been applied"), result.err());
        assertEquals(0, node.requests.size(), "a step sent twice would make two versions");
    }

    @Test
    void shouldPrintTheRolloutHelpWithItsPercentSignsAndNoFormatWarning()
    {
        // picocli formats descriptions: a bare '%' makes it warn on the process's stderr and skip the formatting.
        final PrintStream processErr = System.err;
        final ByteArrayOutputStream warnings = new ByteArrayOutputStream();
        final Result rollout;
        final Result list;
        System.setErr(new PrintStream(warnings, true, StandardCharsets.UTF_8));
        try
        {
            rollout = policy("rollout", "--help");
            list = policy("list", "--help");
        }
        finally
        {
            System.setErr(processErr);
        }

        assertEquals(0, rollout.status(), rollout.toString());
        assertTrue(rollout.out().contains("25% of tenants"), rollout.out());
        assertTrue(list.out().contains("rollout=N%"), list.out());
        assertEquals("", warnings.toString(StandardCharsets.UTF_8));
    }

    @Test
    void shouldShowARolloutInTheList() throws Exception
    {
        final FakeAdminServer node = server(200, """
            {"version":"12",
             "policies":[{"id":"orders-api","selector":{"route":"/v1/orders/{id}"},"rate":"50","version":"5",
                          "rollout":{"tenants":["acme","globex"],"percent":25,"fallback":{"id":"orders-api","rate":"100","version":"3"}}},
                         {"id":"search","rate":"10","version":"2","rollout":{"percent":5}},
                         {"id":"static","rate":"10","version":"1"}]}""");

        final Result result = policy("list", "--admin", node.address());

        assertEquals(0, result.status(), result.toString());
        final String[] lines = result.out().split("\n");
        assertTrue(lines[0].endsWith("SELECTOR"), lines[0]);
        assertTrue(lines[1].matches("orders-api +5 .* +route=/v1/orders/\\{id} rollout=25% \\+2 tenants"), lines[1]);
        assertTrue(lines[2].matches("search +2 .* +\\* rollout=5%"), lines[2]);
        assertTrue(lines[3].matches("static +1 .* +\\*"), lines[3]);
    }

    // ---- Token resolution: --token, then LIMITER_ADMIN_TOKEN, then data/admin-token, then data/node/admin-token ----

    @Test
    void shouldPreferTheTokenOptionToTheEnvironmentAndTheFiles() throws Exception
    {
        final FakeAdminServer node = server(200, POLICY_SET);
        tokenFile("data/admin-token", "from-file-0000000000");
        env = Map.of(AdminClient.TOKEN_ENVIRONMENT, "from-env-00000000000");

        assertEquals(0, policy("list", "--token", "from-option-0000000", "--admin", node.address()).status());

        assertEquals("Bearer from-option-0000000", node.last().authorization());
    }

    @Test
    void shouldPreferTheEnvironmentToTheTokenFiles() throws Exception
    {
        final FakeAdminServer node = server(200, POLICY_SET);
        tokenFile("data/admin-token", "from-file-0000000000");
        env = Map.of(AdminClient.TOKEN_ENVIRONMENT, "  from-env-00000000000\n");

        assertEquals(0, policy("list", "--admin", node.address()).status());

        assertEquals("Bearer from-env-00000000000", node.last().authorization());
    }

    @Test
    void shouldReadDataAdminTokenBeforeDataNodeAdminToken() throws Exception
    {
        final FakeAdminServer node = server(200, POLICY_SET);
        tokenFile("data/admin-token", "cluster-token-000000\n");
        tokenFile("data/node/admin-token", "node-token-000000000\n");
        // An empty variable counts as unset.
        env = Map.of(AdminClient.TOKEN_ENVIRONMENT, "");

        assertEquals(0, policy("list", "--admin", node.address()).status());

        assertEquals("Bearer cluster-token-000000", node.last().authorization());
    }

    @Test
    void shouldFallBackToDataNodeAdminToken() throws Exception
    {
        final FakeAdminServer node = server(200, POLICY_SET);
        tokenFile("data/node/admin-token", " node-token-000000000 \n");
        env = Map.of();

        assertEquals(0, policy("list", "--admin", node.address()).status());

        assertEquals("Bearer node-token-000000000", node.last().authorization());
    }

    @Test
    void shouldSayHowToProvideATokenWhenThereIsNone() throws Exception
    {
        final FakeAdminServer node = server(200, POLICY_SET);
        env = Map.of();

        final Result result = policy("list", "--admin", node.address());

        assertOneLineFailure(result, "limiter policy: no admin token: pass --token TOKEN, set LIMITER_ADMIN_TOKEN, or run from the directory holding data/admin-token");
        assertEquals(0, node.requests.size());
    }

    @Test
    void shouldRefuseATokenFileOthersCanReadAndSayHowToFixIt() throws Exception
    {
        final FakeAdminServer node = server(200, POLICY_SET);
        tokenFile("data/admin-token", "cluster-token-000000\n");
        Files.setPosixFilePermissions(dir.resolve("data/admin-token"), java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        env = Map.of();

        final Result result = policy("list", "--admin", node.address());

        assertOneLineFailure(result, "limiter policy: data/admin-token is accessible by others (rw-r--r--)");
        assertTrue(result.err().contains("chmod 600 data/admin-token"), result.err());
        assertEquals(2, result.status());
        assertEquals(0, node.requests.size(), "the token was not sent");
    }

    /** A token file as ./limiter cluster writes it: readable by its owner only. */
    private void tokenFile(final String name, final String content) throws Exception
    {
        final Path path = dir.resolve(name);
        Files.createDirectories(path.getParent());
        Files.writeString(path, content);
        Files.setPosixFilePermissions(path, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
    }
}
