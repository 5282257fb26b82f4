package dev.limiter.cli.pilot;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import dev.limiter.cli.PolicyCommand;
import dev.limiter.cli.ReportCommand;
import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.LimiterClient;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One pilot run's steps and the resources they use (the cluster when the pilot started it, the
 * backend, the HTTP client). {@link #close()} stops all of it, also from the shutdown hook on Ctrl-C.
 * What each step saw goes into {@link Findings}; a step that fails ends the run with the reason kept.
 */
final class PilotRun implements AutoCloseable
{
    private final Findings findings;
    private final Trace trace;
    private final Path dir;
    private final String token;
    private final Map<String, String> env;
    private final Path workDir;
    private final PrintStream progress;
    private final AtomicBoolean stop = new AtomicBoolean();
    private final AtomicBoolean closed = new AtomicBoolean();
    private PilotCluster cluster;
    private SampleBackend backend;
    private HttpClient http;
    private AdminHttp admin;
    private List<String> servers;
    private List<String> admins;

    /** Thrown by a step that cannot go on; its message says why. */
    static final class StepFailed extends Exception
    {
        private static final long serialVersionUID = 1L;

        StepFailed(final String message)
        {
            super(message);
        }
    }

    PilotRun(final Findings findings, final Path dir, final String token, final Map<String, String> env,
        final Path workDir,
             final PrintStream progress)
    {
        this.findings = findings;
        this.trace = findings.trace;
        this.dir = dir;
        this.token = token;
        this.env = new HashMap<>(env);
        this.env.put("LIMITER_ADMIN_TOKEN", token);
        this.workDir = workDir;
        this.progress = progress;
    }

    /** Every step in turn; a failing step ends the run, its reason kept in {@link Findings#abortedBecause}. */
    void execute(final List<String> givenServers, final List<String> givenAdmins, final String classpath,
        final List<String> nodeFlags)
    {
        try
        {
            start(givenServers, givenAdmins, classpath, nodeFlags);
            phases();
            findings.drills = PilotDrills.run(servers, admins, drillSeconds(), env, workDir, progress);
            checkStopped();
            findings.versions.put(Findings.AFTER_DRILLS, findings.versions.get(Findings.ALL_TENANTS));
            phase(Findings.AFTER_DRILLS);
            findings.falseRejections = new FalseRejectionReview(admin,
                trace).review(List.copyOf(findings.phases.values()));
            checkPolicies();
            report();
            if (givenServers != null)
            {
                policy("delete", trace.policy().id(), "--reason", "pilot done");
            }
        }
        catch (final StepFailed | IOException | RuntimeException e)
        {
            findings.abortedBecause = stop.get() ? "interrupted" : e.getMessage() == null ? e.toString()
                : e.getMessage();
            progress.println(PilotCommand.PREFIX + "stopped: " + findings.abortedBecause);
        }
    }

    private void start(final List<String> givenServers, final List<String> givenAdmins, final String classpath,
                       final List<String> nodeFlags) throws IOException
    {
        if (givenServers == null)
        {
            progress.println(PilotCommand.PREFIX + "starting 3 nodes (data and logs under "
                + dir.resolve("cluster") + ")...");
            cluster = PilotCluster.start(dir.resolve("cluster"), classpath, nodeFlags, token);
            servers = cluster.servers();
            admins = cluster.admins();
            findings.ownCluster = true;
        }
        else
        {
            servers = List.copyOf(givenServers);
            admins = List.copyOf(givenAdmins);
        }
        findings.servers = servers;
        findings.admins = admins;
        admin = new AdminHttp(admins, token);
        backend = SampleBackend.start(trace.backend());
        findings.backendUri = backend.uri();
        http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        progress.println(PilotCommand.PREFIX + "nodes " + servers + ", admin " + admins + ", sample backend "
            + backend.uri() + " (" + Math.round(trace.backend().capacityPerSecond()) + " requests/s)");
    }

    private void phases() throws StepFailed, IOException
    {
        final Trace.PolicyUnderTest p = trace.policy();
        findings.versions.put(Findings.BASELINE, put(policyJson(100_000, 100_000, "ENFORCE"),
            "pilot baseline: the route under an effectively unlimited version, so nothing is refused"));
        awaitVersion("pilot-probe", findings.versions.get(Findings.BASELINE));
        // Not counted: the first second of load runs code the JIT has not compiled yet.
        new PhaseTraffic(trace, servers, backend, http).run("warm-up", Math.min(2, findings.phaseSeconds), stop);
        phase(Findings.BASELINE);

        findings.versions.put(Findings.SHADOW, put(policyJson(p.rate(), p.burst(), "SHADOW"),
            "pilot: the new limits in shadow, evaluated beside the baseline and never deciding"));
        // A shadow version decides nothing, so no decision says it is applied: give the members a moment.
        sleepMillis(500);
        final long[] before = shadowCounts();
        final long shadowStart = System.currentTimeMillis();
        phase(Findings.SHADOW);
        final long[] after = shadowCounts();
        findings.shadowWouldDeny = before[0] < 0 || after[0] < 0 ? -1 : after[0] - before[0];
        findings.shadowWouldAllow = before[1] < 0 || after[1] < 0 ? -1 : after[1] - before[1];
        compare(shadowStart);

        final Path file = writePolicy("first-tenants", policyJson(p.rate(), p.burst(), "ENFORCE"));
        final List<String> rollout = new ArrayList<>(List.of("rollout", p.id(), "--file", file.toString(),
            "--percent", "0"));
        trace.firstTenants().forEach(t -> rollout.addAll(List.of("--tenant", t)));
        rollout.addAll(List.of("--others", "shadow", "--reason", "pilot: enforce for " + trace.firstTenants()
            + " first"));
        findings.versions.put(Findings.FIRST_TENANTS, version(policy(rollout.toArray(String[]::new))));
        awaitVersion(trace.firstTenants().get(0), findings.versions.get(Findings.FIRST_TENANTS));
        phase(Findings.FIRST_TENANTS);

        findings.versions.put(Findings.ALL_TENANTS, version(policy("rollout", p.id(), "--percent", "100", "--reason",
            "pilot: the first tenants went well, enforce for every tenant")));
        awaitVersion("pilot-probe", findings.versions.get(Findings.ALL_TENANTS));
        phase(Findings.ALL_TENANTS);
    }

    private void phase(final String name) throws StepFailed
    {
        checkStopped();
        progress.println(PilotCommand.PREFIX + "phase " + name + " ("
            + PilotCommand.seconds(findings.phaseSeconds) + ")...");
        final PhaseTraffic.Result result = new PhaseTraffic(trace, servers, backend, http).run(name,
            findings.phaseSeconds, stop);
        findings.phases.put(name, result);
        final PhaseFigures total = PhaseFigures.total(result);
        progress.println(String.format(java.util.Locale.ROOT,
            "%sphase %s: %d offered, %.1f%% refused by the limiter, backend %d " + "requests, %d 5xx, p99 %.1f ms",
            PilotCommand.PREFIX, name, total.offered(), 100 * total.rejectionRate(), total.backendRequests(),
            total.backend5xx(), total.backendP99Millis()));
        checkStopped();
    }

    private void checkStopped() throws StepFailed
    {
        if (stop.get())
        {
            throw new StepFailed("interrupted");
        }
    }

    private String policyJson(final long rate, final long burst, final String mode)
    {
        final JsonObject policy = new JsonObject();
        policy.addProperty("id", trace.policy().id());
        final JsonObject selector = new JsonObject();
        selector.addProperty("route", trace.route());
        policy.add("selector", selector);
        policy.addProperty("rate", rate);
        policy.addProperty("burst", burst);
        policy.addProperty("scope", "TENANT");
        policy.addProperty("mode", mode);
        policy.addProperty("owner", trace.policy().owner());
        return policy.toString();
    }

    private Path writePolicy(final String name, final String json) throws IOException
    {
        final Path file = Files.createDirectories(dir.resolve("policies")).resolve(name + ".json");
        Files.writeString(file, json + "\n", StandardCharsets.UTF_8);
        return file;
    }

    private long put(final String json, final String reason) throws StepFailed, IOException
    {
        final String name = JsonParser.parseString(json).getAsJsonObject().get("mode").getAsString()
            .toLowerCase(java.util.Locale.ROOT);
        return version(policy("put", "--file", writePolicy(name + "-" + System.nanoTime(), json).toString(),
            "--reason", reason));
    }

    /**
     * Runs {@code ./limiter policy ARGS --admin ... --json} and returns what it printed; fails the step when it failed.
     */
    private String policy(final String... args) throws StepFailed
    {
        final List<String> all = new ArrayList<>(List.of(args));
        all.addAll(List.of("--admin", String.join(",", admins), "--json"));
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final int status = PolicyCommand.run(all.toArray(String[]::new), new PrintStream(out, true,
            StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8), env, workDir);
        if (status != 0)
        {
            throw new StepFailed("./limiter policy " + String.join(" ", args) + " failed: "
                + err.toString(StandardCharsets.UTF_8).strip());
        }
        final String printed = out.toString(StandardCharsets.UTF_8).strip();
        progress.println(PilotCommand.PREFIX + "policy " + args[0] + " " + trace.policy().id() + ": version "
            + version(printed));
        return printed;
    }

    /** The version a ChangeResult (as JSON) made. */
    private static long version(final String changeResult) throws StepFailed
    {
        try
        {
            return JsonParser.parseString(changeResult).getAsJsonObject().getAsJsonObject("version")
                .getAsJsonObject("policy").get("version").getAsLong();
        }
        catch (final JsonParseException | IllegalStateException | NullPointerException | NumberFormatException e)
        {
            throw new StepFailed("unexpected answer to a policy change: " + FalseRejectionReview.oneLine(changeResult));
        }
    }

    /** Calls as {@code tenant} until a node decides with {@code version} of the policy (at most 10 s). */
    private void awaitVersion(final String tenant, final long version) throws StepFailed
    {
        final long end = System.nanoTime() + 10_000_000_000L;
        try (LimiterClient client = LimiterClient.builder().endpoints(servers.toArray(String[]::new))
            .deadline(Duration.ofMillis(500)).build())
        {
            while (System.nanoTime() < end && !stop.get())
            {
                try
                {
                    final Decision d = client.acquireBlocking(Descriptor.of(tenant, trace.route()), 1);
                    if (!d.degraded() && d.policyId().equals(trace.policy().id()) && d.policyVersion() == version)
                    {
                        return;
                    }
                }
                catch (final RuntimeException e)
                {
                    // no node connected yet: ask again
                }
                sleepMillis(20);
            }
        }
        throw new StepFailed("version " + version + " of " + trace.policy().id() + " did not decide for tenant "
            + tenant + " within 10 s");
    }

    /**
     * {would_deny, would_allow} of the policy under test summed over the nodes' /metrics; -1 when a node did not
     * answer.
     */
    private long[] shadowCounts()
    {
        final long[] counts = {0, 0};
        for (final String address : admins)
        {
            final AdminHttp.Answer metrics = admin.getFrom(address, "/metrics");
            if (!metrics.ok())
            {
                findings.shadowMetricsNote = "no /metrics from " + address + " (HTTP " + metrics.status() + ")";
                return new long[] {-1, -1};
            }
            for (final String line : metrics.body().split("\n"))
            {
                if (line.startsWith("limiter_shadow_decisions_total{") && line.contains("policy=\""
                    + trace.policy().id() + "\""))
                {
                    final int which = line.contains("outcome=\"would_deny\"") ? 0
                        : line.contains("outcome=\"would_allow\"") ? 1 : -1;
                    if (which >= 0)
                    {
                        counts[which] += (long)Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                    }
                }
            }
        }
        return counts;
    }

    /** The nodes' comparison of the shadow since {@code sinceMillis}, where they have it. */
    private void compare(final long sinceMillis)
    {
        final AdminHttp.Answer answer = admin.getApi("/policies/" + trace.policy().id() + "/compare?since="
            + sinceMillis);
        if (answer.ok())
        {
            try
            {
                findings.comparison = JsonParser.parseString(answer.body());
                return;
            }
            catch (final JsonParseException e)
            {
                findings.comparisonNote = "the nodes' comparison was not JSON: "
                    + FalseRejectionReview.oneLine(answer.body());
                return;
            }
        }
        findings.comparisonNote = "comparison not available in this build (GET /policies/" + trace.policy().id()
            + "/compare: " + (answer.status() == 0 ? FalseRejectionReview.oneLine(answer.body()) : "HTTP "
            + answer.status() + " from " + answer.address())
            + "); the pilot's own per-tenant prediction is beside what enforcing refused";
    }

    /** Every policy in force has an owner and a version, and the audit log holds every version the pilot made. */
    private void checkPolicies()
    {
        final AdminHttp.Answer set = admin.get("/v1/policies");
        final AdminHttp.Answer audit = admin.get("/v1/audit?policy=" + trace.policy().id());
        if (!set.ok() || !audit.ok())
        {
            findings.policiesEvidence = "could not read /v1/policies (HTTP " + set.status()
                + ") or /v1/audit (HTTP " + audit.status() + ")";
            return;
        }
        try
        {
            final JsonObject policies = JsonParser.parseString(set.body()).getAsJsonObject();
            final List<JsonElement> all = new ArrayList<>();
            policies.getAsJsonArray("policies").forEach(all::add);
            all.add(policies.get("defaultPolicy"));
            final List<String> lacking = new ArrayList<>();
            for (final JsonElement element : all)
            {
                final JsonObject policy = element.getAsJsonObject();
                if (!policy.has("owner") || policy.get("owner").getAsString().isBlank() || !policy.has("version") ||
                    policy.get("version").getAsLong() <= 0)
                {
                    lacking.add(policy.has("id") ? policy.get("id").getAsString() : "(default)");
                }
            }
            final Set<Long> audited = new HashSet<>();
            JsonParser.parseString(audit.body()).getAsJsonObject().getAsJsonArray("records")
                .forEach(r -> audited.add(r.getAsJsonObject().has("version")
                    ? r.getAsJsonObject().get("version").getAsLong() : 0));
            final Set<Long> made = new HashSet<>(findings.versions.values());
            final boolean allAudited = audited.containsAll(made);
            findings.policiesAudited = lacking.isEmpty() && allAudited;
            findings.policiesEvidence = all.size() + " policies in force, " + (lacking.isEmpty()
                ? "each with an owner and a version" : "without an owner or version: " + lacking)
                + "; the audit log holds versions " + audited + " of " + trace.policy().id() + (allAudited ? ""
                : ", not every one the pilot made " + made);
        }
        catch (final JsonParseException | IllegalStateException | NullPointerException |
                     UnsupportedOperationException e)
        {
            findings.policiesEvidence = "unexpected /v1/policies or /v1/audit answer: " + e.getMessage();
        }
    }

    /** {@code ./limiter report} of the pilot's window into the output directory. */
    private void report()
    {
        final long minutesSinceStart = Math.max(1, (System.currentTimeMillis() - findings.startedAtMillis
            + 59_999) / 60_000);
        final String[] args = {"--since", minutesSinceStart + "m", "--out", dir.resolve("report.html").toString(),
            "--admin", String.join(",", admins)};
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final int status = ReportCommand.run(args, progress, new PrintStream(err, true, StandardCharsets.UTF_8), env,
            workDir);
        if (status == 0)
        {
            findings.reportFile = "report.html";
            findings.reportNote = "written by ./limiter report " + String.join(" ", args);
        }
        else
        {
            findings.reportNote = "./limiter report failed (exit " + status + "): "
                + err.toString(StandardCharsets.UTF_8).strip();
        }
    }

    private int drillSeconds()
    {
        return (int)Math.max(1, Math.min(60, Math.round(findings.phaseSeconds / 10)));
    }

    private static void sleepMillis(final long millis)
    {
        try
        {
            Thread.sleep(millis);
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
    }

    /** From the shutdown hook (Ctrl-C): stop the traffic and everything started. */
    void interrupted()
    {
        stop.set(true);
        close();
    }

    @Override
    public void close()
    {
        if (!closed.compareAndSet(false, true))
        {
            return;
        }
        if (backend != null)
        {
            backend.close();
        }
        if (cluster != null)
        {
            cluster.close();
        }
    }
}
