package dev.limiter.cli;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
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
        "\"reason\":..,\"decidedBy\":\"node\"|\"sdk\"}. retryAfterMs is -1 when retrying can never succeed.",
        "When no node answers in time the SDK decides from the policy set it holds (its emergency budget,",
        "or a refusal): that decision is printed with \"decidedBy\":\"sdk\" and a line on stderr says so.",
        "Exit status: 0 when a node decided (allowed or denied), 1 when no node answered (whether or not",
        "the SDK decided on its own), 2 for invalid input."},
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
            final Decision d = client.acquireBlocking(descriptor, cost);
            System.out.println(toJson(d));
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

    static String toJson(final Decision d)
    {
        return String.format(Locale.ROOT,
            "{\"allowed\":%s,\"remaining\":%d,\"limit\":%d,\"retryAfterMs\":%s,\"resetAfterMs\":%s,\"policy\":\"%s\",\"version\":%d," +
                "\"reason\":\"%s\",\"decidedBy\":\"%s\"}",
            d.allowed(), d.remaining(), d.limit(), millis(d.retryAfterNanos()), millis(d.resetAfterNanos()),
            d.policyId(), d.policyVersion(), d.reason(), d.degraded() ? "sdk" : "node");
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
