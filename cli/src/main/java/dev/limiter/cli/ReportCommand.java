package dev.limiter.cli;

import dev.limiter.cli.report.Report;
import dev.limiter.cli.report.ReportException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/** {@code ./limiter report}: one self-contained HTML page of the cluster's recent decisions. */
@Command(
    name = "report",
    mixinStandardHelpOptions = true,
    description = {
        "Writes one self-contained HTML page (inline CSS and SVG charts, nothing loaded from elsewhere) of the last",
        "--since of the cluster: allowed and denied by policy, by region and by tenant and route; shadow predicted",
        "against enforced; degraded windows; hot keys; false rejections and their ratio; decision latency p99.",
        "The series come from every node's own bounded history (GET /v1/history: 10 s points for 24 h), or from",
        "Prometheus with --prometheus URL (query_range over the same counters). Hot keys, the shadow comparison,",
        "sampled rejections and appeals come from the nodes' admin APIs; a section a node's build does not serve",
        "says so. See docs/report.md.",
        "  ./limiter report --since 24h --out report.html",
        "  ./limiter report --since 1h --out report.html --prometheus http://127.0.0.1:9090",
        "The admin token comes from --token, $LIMITER_ADMIN_TOKEN, data/admin-token or data/node/admin-token.",
        "Exit status: 0 written, 1 a node or Prometheus did not answer or refused, or --out failed, 2 bad input."},
    sortOptions = false)
public final class ReportCommand extends AdminCommand
{
    private static final String PREFIX = "limiter report: ";

    @Option(names = "--since", paramLabel = "DURATION", defaultValue = "24h",
        description = "The window: the last 30m, 24h, 7d ... (the nodes keep 24h; default: ${DEFAULT-VALUE}).")
    String since;

    @Option(names = "--out", paramLabel = "FILE", required = true, description = "The HTML file to write.")
    Path out;

    @Option(names = "--prometheus", paramLabel = "URL",
        description = "Read the series from this Prometheus (e.g. http://127.0.0.1:9090) instead of the nodes' "
            + "history.")
    String prometheus;

    @Option(names = "--admin", split = ",", paramLabel = "HOST:PORT", defaultValue = AdminClient.Options.DEFAULT_ADMIN,
        description = "Admin HTTP address of every node (default: ${DEFAULT-VALUE}; of those, the ones not in use are "
            + "skipped, while every address given explicitly must answer).")
    List<String> admin;

    @Option(names = "--token", paramLabel = "TOKEN",
        description = "Admin API token (default: $LIMITER_ADMIN_TOKEN, else data/admin-token, else "
            + "data/node/admin-token).")
    String token;

    @Option(names = "--timeout-ms", paramLabel = "MS", defaultValue = "5000",
        description = "Connect and answer timeout per call (default: ${DEFAULT-VALUE}).")
    int timeoutMs;

    @Mixin
    TlsOptions tls = new TlsOptions();

    private ReportCommand(final AdminClient.Io io)
    {
        super(io);
    }

    /**
     * Runs {@code ./limiter report} with these arguments.
     *
     * @return the exit status: 0 written, 1 a source failed or --out could not be written, 2 bad input
     */
    public static int run(final String[] args, final PrintStream out, final PrintStream err,
        final Map<String, String> env, final Path workDir)
    {
        return AdminCommand.run(ReportCommand::new, PREFIX, args, out, err, env, workDir);
    }

    public static void main(final String[] args)
    {
        exit(ReportCommand::run, args);
    }

    @Override
    public Integer call() throws AdminClient.Failure
    {
        if (timeoutMs < 1)
        {
            throw AdminClient.usage("--timeout-ms must be 1 or more, was " + timeoutMs);
        }
        try
        {
            final Duration window = Report.parseSince(since);
            final Path file = out.isAbsolute() ? out : io.workDir().toAbsolutePath().resolve(out);
            final String found = AdminClient.resolveToken(token, io.env(), io.workDir()).value();
            final boolean https = tls.requested() || admin.stream().anyMatch(a -> a.strip().startsWith("https://"));
            final Report.Written written = Report.write(new Report.Options(admin,
                String.join(",", admin).equals(AdminClient.Options.DEFAULT_ADMIN), found, https ? tls.context() : null,
                Duration.ofMillis(timeoutMs), window, file, prometheus), System::currentTimeMillis);
            written.notes().forEach(note -> io.err().println(PREFIX + note));
            io.out().println("wrote " + written.out() + ": " + (written.decisions() == 0
                ? "no decisions in this window" : written.decisions() + " decisions") + ", " + written.charts()
                + " charts, the last " + since);
            return 0;
        }
        catch (final ReportException e)
        {
            throw e.exitStatus() == ReportException.USAGE ? AdminClient.usage(e.getMessage()) :
                AdminClient.failed(e.getMessage());
        }
    }
}
