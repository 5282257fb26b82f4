package dev.limiter.cli.report;

import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import javax.net.ssl.SSLContext;

/**
 * GETs of one HTTP base address (a node's admin port, or Prometheus), answers as they came: the
 * status and the body. A call that reaches nobody is a {@link ReportException} naming the address.
 */
final class HttpReader
{
    /** One answer: its status and body. */
    record Answer(int status, String body)
    {
        boolean ok()
        {
            return status / 100 == 2;
        }
    }

    private final HttpClient http;
    private final String base;
    private final String token;
    private final Duration timeout;

    /**
     * @param base  {@code http://host:port} or {@code https://host:port}, no trailing slash
     * @param token the admin API's bearer token, or null (Prometheus)
     * @param tls   the TLS context for https, or null
     */
    HttpReader(final String base, final String token, final SSLContext tls, final Duration timeout)
    {
        final HttpClient.Builder builder = HttpClient.newBuilder();
        if (tls != null)
        {
            builder.sslContext(tls);
        }
        this.http = builder.version(HttpClient.Version.HTTP_1_1).connectTimeout(timeout)
            .proxy(HttpClient.Builder.NO_PROXY).followRedirects(HttpClient.Redirect.NEVER).build();
        this.base = base;
        this.token = token;
        this.timeout = timeout;
    }

    /** The address as the operator gave it (for messages). */
    String base()
    {
        return base;
    }

    /** GETs {@code pathAndQuery}. */
    Answer get(final String pathAndQuery) throws ReportException
    {
        final HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + pathAndQuery)).timeout(timeout)
            .header("Accept", "application/json").GET();
        if (token != null)
        {
            request.header("Authorization", "Bearer " + token);
        }
        try
        {
            final HttpResponse<String> response = http.send(request.build(),
                HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
            return new Answer(response.statusCode(), response.body());
        }
        catch (final HttpConnectTimeoutException e)
        {
            throw ReportException.failed(base + " did not accept a connection within " + timeout.toMillis() + " ms");
        }
        catch (final HttpTimeoutException e)
        {
            throw ReportException.failed(base + " did not answer GET " + pathAndQuery + " within "
                + timeout.toMillis() + " ms");
        }
        catch (final ConnectException e)
        {
            throw ReportException.failed(base + " refused the connection");
        }
        catch (final IOException e)
        {
            throw ReportException.failed(base + " failed (" + e.getClass().getSimpleName() +
                (e.getMessage() == null ? "" : ": " + e.getMessage()) + ")");
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            throw ReportException.failed("interrupted while asking " + base);
        }
    }

    /**
     * GETs {@code /v1} + {@code path}, then {@code path} itself when the first is unknown (404): the
     * admin API's newer routes, wherever a build put them.
     */
    Answer getEither(final String path) throws ReportException
    {
        final Answer prefixed = get("/v1" + path);
        return prefixed.status() == 404 && unknownEndpoint(prefixed) ? get(path) : prefixed;
    }

    /** A 404 that says the path is unknown (an older build), not that the thing asked for is. */
    static boolean unknownEndpoint(final Answer answer)
    {
        return answer.status() == 404 && (answer.body() == null || answer.body().contains("no such endpoint"));
    }
}
