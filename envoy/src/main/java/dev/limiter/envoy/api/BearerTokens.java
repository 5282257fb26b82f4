package dev.limiter.envoy.api;

import io.grpc.Context;
import io.grpc.Contexts;
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
 * with # skipped), each optionally followed by the tenants it may ask for
 * ({@code TOKEN acme,globex}; a token alone may ask for any: {@link TenantGrant}). Every token is
 * compared in constant time with every accepted one, so the time taken says nothing about how much
 * of a token was right. Also the gRPC interceptor that refuses a call without an accepted token
 * (UNAUTHENTICATED) before its request is read, and hands the token's grant to the call
 * ({@link #GRANT}).
 */
public final class BearerTokens implements ServerInterceptor
{
    /** Shortest token accepted in the file: a guessable token is no authentication. */
    public static final int MIN_TOKEN_CHARS = 16;
    private static final Metadata.Key<String> AUTHORIZATION = Metadata.Key.of("authorization",
        Metadata.ASCII_STRING_MARSHALLER);
    private static final String BEARER = "Bearer ";
    /** The grant of the token a gRPC call came with; any tenant where no token is asked for (client certificates). */
    static final Context.Key<TenantGrant> GRANT = Context.keyWithDefault("limiter-tenant-grant", TenantGrant.ANY);

    private final List<byte[]> accepted;
    private final List<TenantGrant> grants;
    private final AtomicLong refused = new AtomicLong();

    private BearerTokens(final List<byte[]> accepted, final List<TenantGrant> grants)
    {
        this.accepted = accepted;
        this.grants = grants;
    }

    /** The tokens given, each of which may ask for any tenant. */
    public static BearerTokens of(final String... tokens)
    {
        final List<byte[]> accepted = new ArrayList<>();
        final List<TenantGrant> grants = new ArrayList<>();
        for (final String token : tokens)
        {
            accepted.add(check(token, "a token").getBytes(StandardCharsets.UTF_8));
            grants.add(TenantGrant.ANY);
        }
        return of(accepted, grants);
    }

    private static BearerTokens of(final List<byte[]> accepted, final List<TenantGrant> grants)
    {
        if (accepted.isEmpty())
        {
            throw new IllegalArgumentException("no token given");
        }
        return new BearerTokens(List.copyOf(accepted), List.copyOf(grants));
    }

    /**
     * The tokens of {@code file}.
     *
     * @throws IllegalArgumentException when it cannot be read, holds no token, a token is short or has
     *                                  spaces, a token is given twice, or a tenant cannot be granted
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
        final List<byte[]> tokens = new ArrayList<>();
        final List<TenantGrant> grants = new ArrayList<>();
        final java.util.Set<String> seen = new java.util.HashSet<>();
        for (int i = 0; i < lines.size(); i++)
        {
            final String line = lines.get(i).strip();
            if (line.isEmpty() || line.startsWith("#"))
            {
                continue;
            }
            final String where = "--token-file " + file + " line " + (i + 1);
            final String[] fields = line.split("[ \t]+");
            if (fields.length > 2)
            {
                throw new IllegalArgumentException(where + ": a line is a token, then optionally the tenants it "
                    + "may ask for, comma-separated without spaces (TOKEN acme,globex)");
            }
            final String token = check(fields[0], where);
            if (!seen.add(token))
            {
                throw new IllegalArgumentException(where + ": this token is on an earlier line too: give each once, "
                    + "with all the tenants it may ask for");
            }
            tokens.add(token.getBytes(StandardCharsets.UTF_8));
            grants.add(fields.length == 1 ? TenantGrant.ANY : TenantGrant.parse(fields[1], where));
        }
        if (tokens.isEmpty())
        {
            throw new IllegalArgumentException("--token-file " + file + " holds no token (one a line)");
        }
        return of(tokens, grants);
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
        return grantOf(authorization) != null;
    }

    /**
     * The grant of the accepted token an Authorization header value carries, or null (counted as
     * refused) when it carries none. Compares with every token, matching or not.
     */
    TenantGrant grantOf(final String authorization)
    {
        if (authorization == null || !authorization.regionMatches(true, 0, BEARER, 0, BEARER.length()))
        {
            refused.incrementAndGet();
            return null;
        }
        final byte[] given = authorization.substring(BEARER.length()).strip().getBytes(StandardCharsets.UTF_8);
        TenantGrant grant = null;
        for (int i = 0; i < accepted.size(); i++)
        {
            final boolean match = MessageDigest.isEqual(accepted.get(i), given);
            grant = match ? grants.get(i) : grant;
        }
        if (grant == null)
        {
            refused.incrementAndGet();
        }
        return grant;
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
        final TenantGrant grant = grantOf(headers.get(AUTHORIZATION));
        if (grant == null)
        {
            call.close(Status.UNAUTHENTICATED.withDescription("authorization: a bearer token of the gateway's " +
                "--token-file is required"),
                new Metadata());
            return new ServerCall.Listener<>()
            {
            };
        }
        return Contexts.interceptCall(Context.current().withValue(GRANT, grant), call, headers, next);
    }
}
