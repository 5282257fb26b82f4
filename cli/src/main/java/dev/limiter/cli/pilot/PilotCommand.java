package dev.limiter.cli.pilot;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code ./limiter pilot}: the seed's pilot on a local cluster in compressed time. It starts its own
 * three nodes (or uses a running cluster with {@code --server}), its own sample backend, and plays the
 * bundled trace through the SDK in front of the backend: a baseline without enforcement, the new
 * policy in shadow, the policy for a few tenants then for all, the four drills, the traffic again,
 * then the review of false rejections, the report and each exit criterion's verdict. Everything it
 * started is stopped when it ends, on failure or on Ctrl-C.
 */
@Command(
    name = "pilot",
    mixinStandardHelpOptions = true,
    description = {
        "Runs the pilot of the source requirements on a local cluster in compressed",
        "time and judges its exit criteria:",
        "  1. baseline      the trace (config/pilot-trace.json: a few tenants, one",
        "                   noisy, one spike) played open loop through the SDK in",
        "                   front of a bundled sample backend of fixed capacity,",
        "                   with no effective limit",
        "  2. shadow        the new policy in shadow mode under the same traffic;",
        "                   its predictions compared (./limiter policy compare)",
        "  3. first tenants the policy enforced for the trace's firstTenants only",
        "                   (a staged rollout), then",
        "  4. all tenants   for every tenant",
        "  5. drills        rollback, hot-tenant, spike, leader-kill, store-failure",
        "                   (./limiter drill), each with its verdict",
        "  6. after drills  the traffic again: do the latency targets still hold?",
        "  then the false-rejection review (appeals of refusals the pilot's own",
        "  model did not expect), ./limiter report, summary.html and pilot.json",
        "  with every criterion PASS, FAIL or NOT_RUN with a reason.",
        "Each traffic phase lasts M x 60 / 6 seconds (the drills take about the",
        "sixth part); --minutes 0.5 is a quick look. Without --server it starts",
        "three node processes on free 127.0.0.1 ports (data under DIR/cluster) and",
        "stops them at the end, on failure and on Ctrl-C; the backend listens on",
        "127.0.0.1 and an ephemeral port.",
        "Exit status: 0 every criterion PASS or not run for a stated reason,",
        "1 one FAILED, 2 bad input."},
    sortOptions = false)
public final class PilotCommand implements Callable<Integer>
{
    static final String PREFIX = "limiter pilot: ";
    /** The store server's classpath, which {@code ./limiter pilot} passes so that the pilot can start nodes. */
    static final String SERVER_CLASSPATH_PROPERTY = "limiter.pilot.serverClasspath";
    /** The nodes' JVM flags (space-separated), from {@code ./limiter pilot}. */
    static final String NODE_FLAGS_PROPERTY = "limiter.pilot.nodeJvmFlags";

    @Option(names = "--out", paramLabel = "DIR",
        description = "Where pilot.json, summary.html and report.html go (default: ${DEFAULT-VALUE}).")
    Path out = Path.of("pilot-out");

    @Option(names = "--minutes", paramLabel = "M",
        description = "The whole run's length in minutes, 0.1 to 120 (default: ${DEFAULT-VALUE}).")
    double minutes = 3;

    @Option(names = "--trace", paramLabel = "FILE",
        description = "The traffic, policy, backend and targets (default: ${DEFAULT-VALUE}).")
    Path trace = Path.of("config", "pilot-trace.json");

    @Option(names = "--server", split = ",", paramLabel = "HOST:PORT",
        description = "Use this running cluster (data addresses) instead of starting one; needs --admin and its token.")
    List<String> servers;

    @Option(names = "--admin", split = ",", paramLabel = "HOST:PORT",
        description = "With --server: the nodes' admin addresses (default: ${DEFAULT-VALUE}, ./limiter cluster's).")
    List<String> admins = List.of("127.0.0.1:7481", "127.0.0.1:7482", "127.0.0.1:7483");

    @Option(names = "--token", paramLabel = "TOKEN",
        description = "With --server: the admin token (default: $LIMITER_ADMIN_TOKEN, else data/admin-token).")
    String token;

    private final PrintStream stdout;
    private final PrintStream stderr;
    private final Map<String, String> env;
    private final Path workDir;

    private PilotCommand(final PrintStream stdout, final PrintStream stderr, final Map<String, String> env,
        final Path workDir)
    {
        this.stdout = stdout;
        this.stderr = stderr;
        this.env = env;
        this.workDir = workDir;
    }

    /**
     * Runs {@code ./limiter pilot} with these arguments.
     *
     * @return 0 every criterion PASS or not run for a stated reason, 1 one failed, 2 bad input
     */
    public static int run(final String[] args, final PrintStream out, final PrintStream err, final Map<String,
        String> env,
                          final Path workDir)
    {
        final PilotCommand command = new PilotCommand(out, err, env, workDir);
        final CommandLine line = new CommandLine(command)
            .setOut(new PrintWriter(out, true, StandardCharsets.UTF_8))
            .setErr(new PrintWriter(err, true, StandardCharsets.UTF_8))
            .setParameterExceptionHandler((e, arguments) ->
            {
                err.println(PREFIX + e.getMessage() + " (see ./limiter pilot --help)");
                return 2;
            })
            .setExecutionExceptionHandler((e, failed, parsed) ->
            {
                if (e instanceof BadInput)
                {
                    err.println(PREFIX + e.getMessage());
                    return 2;
                }
                err.println(PREFIX + "failed: " + e);
                return 1;
            });
        return line.execute(args);
    }

    public static void main(final String[] args)
    {
        System.exit(run(args, System.out, System.err, System.getenv(), Path.of("")));
    }

    /** Input the pilot refuses before it starts anything. */
    static final class BadInput extends Exception
    {
        private static final long serialVersionUID = 1L;

        BadInput(final String message)
        {
            super(message);
        }
    }

    @Override
    public Integer call() throws BadInput, IOException
    {
        if (!(minutes >= 0.1 && minutes <= 120))
        {
            throw new BadInput("--minutes must be 0.1 to 120, was " + minutes);
        }
        final Trace bundled;
        try
        {
            bundled = Trace.read(workDir.resolve(trace));
        }
        catch (final IOException e)
        {
            throw new BadInput("cannot read the trace " + trace + ": " + e.getMessage() + " (pass --trace FILE)");
        }
        catch (final IllegalArgumentException e)
        {
            throw new BadInput("bad trace: " + e.getMessage());
        }
        final String adminToken = servers == null ? newToken() : token();
        final String classpath = System.getProperty(SERVER_CLASSPATH_PROPERTY, "");
        if (servers == null && classpath.isBlank())
        {
            throw new BadInput("no cluster to run against: run it as ./limiter pilot (which starts its own nodes), " +
                "or pass --server and --admin of a running cluster (./limiter cluster)");
        }
        final Path dir = workDir.resolve(out).toAbsolutePath();
        Files.createDirectories(dir);
        final Findings findings = new Findings(bundled, minutes, Math.max(1, minutes * 60 / 6));
        final List<String> nodeFlags = Arrays.stream(System.getProperty(NODE_FLAGS_PROPERTY, "").split(" "))
            .filter(s -> !s.isBlank()).toList();
        try (PilotRun run = new PilotRun(findings, dir, adminToken, env, workDir, stderr))
        {
            final Thread onInterrupt = new Thread(run::interrupted, "pilot-shutdown");
            Runtime.getRuntime().addShutdownHook(onInterrupt);
            try
            {
                run.execute(servers, admins, classpath, nodeFlags);
            }
            finally
            {
                removeHook(onInterrupt);
            }
            final List<ExitCriteria.Criterion> criteria = ExitCriteria.judge(findings);
            final int exit = criteria.stream().allMatch(ExitCriteria.Criterion::acceptable) ? 0 : 1;
            PilotOutput.writeJson(dir.resolve("pilot.json"), PilotOutput.document(findings, criteria, exit));
            SummaryPage.write(dir.resolve("summary.html"), findings, criteria, exit);
            PilotOutput.console(stdout, findings, criteria, dir, exit);
            return exit;
        }
    }

    private static void removeHook(final Thread hook)
    {
        try
        {
            Runtime.getRuntime().removeShutdownHook(hook);
        }
        catch (final IllegalStateException e)
        {
            // the JVM is shutting down: the hook runs
        }
    }

    /** --token, then $LIMITER_ADMIN_TOKEN, then data/admin-token under the working directory. */
    private String token() throws BadInput
    {
        if (token != null && !token.isBlank())
        {
            return token.strip();
        }
        final String fromEnv = env.get("LIMITER_ADMIN_TOKEN");
        if (fromEnv != null && !fromEnv.isBlank())
        {
            return fromEnv.strip();
        }
        final Path file = workDir.resolve("data").resolve("admin-token");
        try
        {
            final String read = Files.readString(file).strip();
            if (!read.isEmpty())
            {
                return read;
            }
        }
        catch (final IOException e)
        {
            // said below
        }
        throw new BadInput("with --server the pilot needs the cluster's admin token: pass --token, set " +
            "LIMITER_ADMIN_TOKEN or run from the directory holding data/admin-token");
    }

    private static String newToken()
    {
        final byte[] bytes = new byte[32];
        new SecureRandom().nextBytes(bytes);
        return HexFormat.of().formatHex(bytes);
    }

    static String seconds(final double s)
    {
        return String.format(Locale.ROOT, "%.1f s", s);
    }
}
