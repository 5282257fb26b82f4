package dev.limiter.server.testing;

import dev.limiter.server.StoreServer;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

/** Calls to a node's admin port as the actor "alice", and what the tests read from its answers. */
public final class AdminCalls
{
    /** The admin token the tests of the admin API give their nodes. */
    public static final String TOKEN = "test-token-0123456789abcdef";

    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private AdminCalls()
    {
    }

    /** {@code method path} with {@code body} (null: none) and, unless null, {@code token} as the bearer. */
    public static HttpResponse<String> call(final HttpClient http, final int port, final String method,
        final String path, final String body, final String token) throws Exception
    {
        final HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(body))
            .header("X-Limiter-Actor", "alice");
        if (token != null)
        {
            request.header("Authorization", "Bearer " + token);
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** {@code method path} on {@code server}'s admin port with {@link #TOKEN}. */
    public static HttpResponse<String> call(final StoreServer server, final String method, final String path,
        final String body) throws Exception
    {
        return call(HTTP, server.adminPort(), method, path, body, TOKEN);
    }

    /** {@code server}'s Prometheus scrape, read as anyone may (no token). */
    public static String metrics(final StoreServer server) throws Exception
    {
        return call(HTTP, server.adminPort(), "GET", "/metrics", null, null).body();
    }

    /** The value of {@code series} (name and labels, as written) in a Prometheus scrape; 0 when absent. */
    public static long metric(final String metrics, final String series)
    {
        for (final String line : metrics.split("\n"))
        {
            if (line.startsWith(series + " "))
            {
                return (long)Double.parseDouble(line.substring(series.length() + 1));
            }
        }
        return 0;
    }
}
