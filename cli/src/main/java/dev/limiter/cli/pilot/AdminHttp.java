package dev.limiter.cli.pilot;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

/**
 * The few admin API reads and writes the pilot makes itself, as JSON over HTTP with the bearer token
 * (policy changes and drills go through the operator commands, which have their own client). A call
 * goes to each admin address in turn until one answers other than 421 (not the leader).
 */
final class AdminHttp
{
    /** An answer: its HTTP status, body and the address that gave it; status 0 when no node answered. */
    record Answer(int status, String body, String address)
    {
        boolean ok()
        {
            return status / 100 == 2;
        }
    }

    private final List<String> addresses;
    private final String token;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    AdminHttp(final List<String> addresses, final String token)
    {
        this.addresses = List.copyOf(addresses);
        this.token = token;
    }

    List<String> addresses()
    {
        return addresses;
    }

    Answer get(final String pathAndQuery)
    {
        return call("GET", pathAndQuery, null);
    }

    Answer post(final String path, final String json)
    {
        return call("POST", path, json);
    }

    /** One node's answer to a GET (for per-node figures such as /metrics). */
    Answer getFrom(final String address, final String pathAndQuery)
    {
        return send(address, "GET", pathAndQuery, null);
    }

    /** A GET of an admin API route ({@code /v1} and the path): the first member's answer whatever its status. */
    Answer getApi(final String pathAndQuery)
    {
        return get("/v1" + pathAndQuery);
    }

    /** A POST of an admin API route ({@code /v1} and the path), to the members in turn until one takes it. */
    Answer postApi(final String path, final String json)
    {
        return post("/v1" + path, json);
    }

    private Answer call(final String method, final String pathAndQuery, final String json)
    {
        Answer last = new Answer(0, "no admin address answered: " + addresses, "");
        for (final String address : addresses)
        {
            final Answer answer = send(address, method, pathAndQuery, json);
            if (answer.status() != 0 && answer.status() != 421)
            {
                return answer;
            }
            last = answer.status() == 0 ? last : answer;
        }
        return last;
    }

    private Answer send(final String address, final String method, final String pathAndQuery, final String json)
    {
        try
        {
            final HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://" + address + pathAndQuery))
                .timeout(Duration.ofSeconds(5)).header("Authorization", "Bearer " + token).header("Accept",
                    "application/json")
                .header("X-Limiter-Actor", "pilot");
            if (json == null)
            {
                request.method(method, HttpRequest.BodyPublishers.noBody());
            }
            else
            {
                request.header("Content-Type", "application/json").method(method,
                    HttpRequest.BodyPublishers.ofString(json));
            }
            final HttpResponse<String> response = http.send(request.build(),
                HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
            return new Answer(response.statusCode(), response.body(), address);
        }
        catch (final IOException | IllegalArgumentException e)
        {
            return new Answer(0, address + ": " + e.getMessage(), address);
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            return new Answer(0, "interrupted", address);
        }
    }
}
