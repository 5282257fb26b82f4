package dev.limiter.cli;

import dev.limiter.client.LimiterClient;
import dev.limiter.client.LimiterException;
import dev.limiter.protocol.LeaseToken;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** {@code ./limiter release --lease ID}: gives back a lease a concurrency limit granted. */
@Command(
    name = "release",
    mixinStandardHelpOptions = true,
    description = {
        "Gives back a lease that 'acquire' printed (a grant of a policy with maxConcurrent), so that it stops",
        "counting against the limit now rather than when it expires. A lease that has expired already frees",
        "nothing. Exit status: 0 when a node applied the release, 1 when none could, 2 for invalid input."},
    sortOptions = false)
public final class ReleaseCommand implements Callable<Integer>
{
    @picocli.CommandLine.Mixin
    TlsOptions tls = new TlsOptions();

    @Option(names = "--server", split = ",", paramLabel = "HOST:PORT", description = "Store node(s) (default: 127.0.0.1:7400).")
    List<String> servers = List.of("127.0.0.1:7400");

    @Option(names = "--lease", required = true, paramLabel = "ID", description = "The lease id, as acquire printed it (L1....).")
    String lease;

    @Option(names = "--deadline-ms", description = "Give up after this many milliseconds (default: ${DEFAULT-VALUE}).")
    long deadlineMs = 2000;

    @Override
    public Integer call()
    {
        final LimiterClient.Builder builder;
        try
        {
            LeaseToken.parse(lease);
            builder = tls.applyTo(LimiterClient.builder().endpoints(servers.toArray(new String[0]))
                .deadline(Duration.ofMillis(deadlineMs)).connections(1).localFallback(false));
        }
        catch (final IllegalArgumentException e)
        {
            System.err.println("limiter release: " + e.getMessage());
            return 2;
        }
        try (LimiterClient client = builder.build())
        {
            client.release(lease).get(deadlineMs + 1000, TimeUnit.MILLISECONDS);
            System.out.println("released " + lease);
            return 0;
        }
        catch (final ExecutionException e)
        {
            System.err.println("limiter release: not released (it counts until it expires): " + e.getCause().getMessage());
            return 1;
        }
        catch (final TimeoutException | LimiterException e)
        {
            System.err.println("limiter release: not released (it counts until it expires): " + e.getMessage());
            return 1;
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            return 1;
        }
    }

    public static void main(final String[] args)
    {
        System.exit(new CommandLine(new ReleaseCommand()).execute(args));
    }
}
