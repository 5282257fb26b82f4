package dev.limiter.cli;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.Lease;
import dev.limiter.client.LimiterClient;
import dev.limiter.client.LimiterException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

/** {@code ./limiter acquire}: one decision, printed as one JSON line. */
@Command(
    name = "acquire",
    mixinStandardHelpOptions = true,
    description = {
        "Asks a store node for one decision and prints it as one JSON line:",
        "{\"allowed\":..,\"remaining\":..,\"limit\":..,\"retryAfterMs\":..,\"resetAfterMs\":..,\"policy\":..,\"version\":..,",
        "\"reason\":..,\"decidedBy\":\"node\"|\"sdk\"[,\"lease\":\"L1...\"]}. retryAfterMs is -1 when retrying can never succeed.",
        "A grant of a concurrency limit (maxConcurrent) holds a lease, printed as \"lease\": it counts until",
        "'./limiter release --lease ID' gives it back or it expires (the policy's leaseTtl).",
        "When no node answers in time the SDK decides from the policy set it holds (its emergency budget,",
        "or a refusal): that decision is printed with \"decidedBy\":\"sdk\" and a line on stderr says so.",
        "Exit status: 0 when a node decided (allowed or denied), 1 when no node answered (whether or not",
        "the SDK decided on its own), 2 for invalid input; with --lease, 3 when no lease was granted."},
    sortOptions = false)
public final class AcquireCommand implements Callable<Integer>
{
    @picocli.CommandLine.Mixin
    TlsOptions tls = new TlsOptions();

    @Option(names = "--server", split = ",", paramLabel = "HOST:PORT", description = "Store node(s) (default: 127.0.0.1:7400).")
    List<String> servers = List.of("127.0.0.1:7400");

    @Option(names = "--tenant", required = true, description = "Tenant id.")
    String tenant;

    @Option(names = "--route", required = true, description = "Request path, e.g. /v1/orders/42.")
    String route;

    @Option(names = "--method", description = "HTTP method or RPC verb.")
    String method = "";

    @Option(names = "--user", description = "Principal (user) within the tenant.")
    String user = "";

    @Option(names = "--ip", description = "Client IP.")
    String ip = "";

    @Option(names = "--region", description = "Region.")
    String region = "";

    @Option(names = "--cost", description = "Tokens to take (default: ${DEFAULT-VALUE}).")
    int cost = 1;

    @Option(names = "--lease", description = "Take a lease (the route's policy has maxConcurrent): print only its id, " +
        "for ID=$(./limiter acquire --lease ...); the decision goes to stderr when there is none (exit 3).")
    boolean lease;

    @Option(names = "--deadline-ms", description = "Give up after this many milliseconds (default: ${DEFAULT-VALUE}).")
    long deadlineMs = 2000;

    @Override
    public Integer call()
    {
        final Descriptor descriptor;
        final LimiterClient.Builder builder;
        try
        {
            descriptor = Descriptor.builder().tenant(tenant).route(route).method(method).principal(user).clientIp(ip)
                .region(region).build();
            if (cost < 1)
            {
                throw new IllegalArgumentException("--cost must be at least 1, was " + cost);
            }
            builder = tls.applyTo(LimiterClient.builder().endpoints(servers.toArray(new String[0]))
                .deadline(Duration.ofMillis(deadlineMs)).connections(1));
        }
        catch (final IllegalArgumentException e)
        {
            System.err.println("limiter acquire: " + e.getMessage());
            return 2;
        }
        try (LimiterClient client = builder.build())
        {
            final Lease taken = client.acquireLease(descriptor, cost); // closed by nobody: the lease outlives this process
            final Decision d = taken.decision();
            if (lease)
            {
                if (taken.held())
                {
                    System.out.println(taken.id());
                    return 0;
                }
                System.err.println(toJson(d, null));
                System.err.println("limiter acquire: no lease: " + (!d.allowed() ? "the request was denied (" + d.reason() + ")" :
                    d.degraded() ? "no node answered; the SDK's own decision holds none" :
                    "policy " + d.policyId() + " is not a concurrency limit (it has no maxConcurrent), so its grants hold none"));
                return d.degraded() ? 1 : 3;
            }
            System.out.println(toJson(d, taken.id()));
            if (taken.held())
            {
                System.err.println("limiter acquire: this grant holds a lease of policy " + d.policyId() +
                    "; give it back with ./limiter release --lease " + taken.id());
            }
            if (d.degraded())
            {
                System.err.println("limiter acquire: no node of " + servers + " answered within " + deadlineMs +
                    " ms; the decision above is the SDK's own (" + d.reason() + "), not the cluster's");
                return 1;
            }
            return 0;
        }
        catch (final LimiterException e)
        {
            System.err.println("limiter acquire: " + e.getMessage());
            return 1;
        }
    }

    static String toJson(final Decision d, final String leaseId)
    {
        return String.format(Locale.ROOT,
            "{\"allowed\":%s,\"remaining\":%d,\"limit\":%d,\"retryAfterMs\":%s,\"resetAfterMs\":%s,\"policy\":\"%s\",\"version\":%d," +
                "\"reason\":\"%s\",\"decidedBy\":\"%s\"%s}",
            d.allowed(), d.remaining(), d.limit(), millis(d.retryAfterNanos()), millis(d.resetAfterNanos()),
            d.policyId(), d.policyVersion(), d.reason(), d.degraded() ? "sdk" : "node", leaseId == null ? "" : ",\"lease\":\"" + leaseId + "\"");
    }

    private static String millis(final long nanos)
    {
        if (nanos < 0)
        {
            return "-1";
        }
        return new BigDecimal(nanos).movePointLeft(6).stripTrailingZeros().toPlainString();
    }

    public static void main(final String[] args)
    {
        System.exit(new CommandLine(new AcquireCommand()).execute(args));
    }
}
