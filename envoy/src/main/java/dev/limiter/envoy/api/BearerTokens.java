package dev.limiter.envoy.api;

import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The bearer tokens callers of the API present ({@code Authorization: Bearer TOKEN}, in gRPC
 * metadata or an HTTP header), read from a file of one token a line (blank lines and lines starting
 * with # skipped). Every token is compared in constant time with every accepted one, so the time
 * taken says nothing about how much of a token was right. Also the gRPC interceptor that refuses a
 * call without an accepted token (UNAUTHENTICATED) before its request is read.
 */
public final class BearerTokens implements ServerInterceptor
{
    /** Shortest token accepted in the file: a guessable token is no authentication. */
    public static final int MIN_TOKEN_CHARS = 16;
    private static final Metadata.Key<String> AUTHORIZATION = Metadata.Key.of("authorization",
        Metadata.ASCII_STRING_MARSHALLER);
    private static final String BEARER = "Bearer ";

    private final List<byte[]> accepted;
    private final AtomicLong refused = new AtomicLong();

    private BearerTokens(final List<byte[]> accepted)
    {
        this.accepted = accepted;
    }

    /** The tokens given. */
    public static BearerTokens of(final String... tokens)
    {
        final List<byte[]> accepted = new ArrayList<>();
        for (final String token : tokens)
        {
            accepted.add(check(token, "a token").getBytes(StandardCharsets.UTF_8));
        }
        if (accepted.isEmpty())
        {
            throw new IllegalArgumentException("no token given");
        }
        return new BearerTokens(List.copyOf(accepted));
    }

    /**
     * The tokens of {@code file}.
     *
     * @throws IllegalArgumentException when it cannot be read, holds no token, or a token is short or has spaces
     */
    public static BearerTokens read(final Path file)
    {
        final List<String> lines;
        try
        {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        }
        catch (final IOException | UncheckedIOException e)
        {
            throw new IllegalArgumentException("--token-file " + file + " cannot be read: " + e.getMessage(), e);
        }
        final List<String> tokens = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++)
        {
            final String line = lines.get(i).strip();
            if (!line.isEmpty() && !line.startsWith("#"))
            {
                tokens.add(check(line, "--token-file " + file + " line " + (i + 1)));
            }
        }
        if (tokens.isEmpty())
        {
            throw new IllegalArgumentException("--token-file " + file + " holds no token (one a line)");
        }
        return of(tokens.toArray(String[]::new));
    }

    private static String check(final String token, final String where)
    {
        if (token.length() < MIN_TOKEN_CHARS || !token.chars().allMatch(c -> c > 0x20 && c < 0x7f))
        {
            throw new IllegalArgumentException(where + ": a token is at least " + MIN_TOKEN_CHARS +
                " printable ASCII characters without spaces");
        }
        return token;
    }

    /** Whether an Authorization header value ({@code Bearer TOKEN}; null when absent) carries an accepted token. */
    public boolean accepts(final String authorization)
    {
        if (authorization == null || !authorization.regionMatches(true, 0, BEARER, 0, BEARER.length()))
        {
            refused.incrementAndGet();
            return false;
        }
        final byte[] given = authorization.substring(BEARER.length()).strip().getBytes(StandardCharsets.UTF_8);
        boolean match = false;
        for (final byte[] token : accepted)
        {
            match |= MessageDigest.isEqual(token, given);
        }
        if (!match)
        {
            refused.incrementAndGet();
        }
        return match;
    }

    /** The first token (what a client reading the same file sends). */
    public byte[] first()
    {
        return accepted.get(0).clone();
    }

    /** Calls and HTTP requests refused for a missing or wrong token. */
    public long refused()
    {
        return refused.get();
    }

    @Override
    public <Q, A> ServerCall.Listener<Q> interceptCall(final ServerCall<Q, A> call, final Metadata headers,
        final ServerCallHandler<Q, A> next)
    {
        if (!accepts(headers.get(AUTHORIZATION)))
        {
            call.close(Status.UNAUTHENTICATED.withDescription("authorization: a bearer token of the gateway's " +
                "--token-file is required"),
                new Metadata());
            return new ServerCall.Listener<>()
            {
            };
        }
        return next.startCall(call, headers);
    }
}
