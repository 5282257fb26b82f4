package dev.limiter.cli;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.MessageOrBuilder;
import com.google.protobuf.util.JsonFormat;
import dev.limiter.protocol.policy.AdminError;
import picocli.CommandLine.Option;
import picocli.CommandLine;

import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.net.ConnectException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.net.ssl.SSLContext;

/**
 * What {@code ./limiter policy} and {@code ./limiter audit} share: the common options, where the admin
 * token comes from, the admin HTTP calls with their fail-over from node to node, the one-line failure
 * reports and the table formatting.
 */
final class AdminClient
{
    /** The environment variable holding the admin token (the nodes read the same one). */
    static final String TOKEN_ENVIRONMENT = "LIMITER_ADMIN_TOKEN";

    /** Token files tried after --token and the environment, relative to the working directory. */
    static final List<String> TOKEN_FILES = List.of("data/admin-token", "data/node/admin-token");

    /** Exit status when the API refused, or no node answered. */
    static final int FAILED = 1;

    /** Exit status for bad input, found before any call. */
    static final int USAGE = 2;

    private static final int NOT_LEADER = 421;

    private final HttpClient http;
    private final List<String> addresses;
    private final String token;
    private final String tokenSource;
    private final String actor;
    private final int timeoutMs;

    private AdminClient(final List<String> addresses, final String token, final String tokenSource, final String actor,
                        final int timeoutMs, final SSLContext tls)
    {
        this.addresses = addresses;
        this.token = token;
        this.tokenSource = tokenSource;
        this.actor = actor;
        this.timeoutMs = timeoutMs;
        // Admin traffic stays inside the cluster's network: never through a proxy, never redirected.
        final HttpClient.Builder builder = HttpClient.newBuilder();
        if (tls != null)
        {
            builder.sslContext(tls);
        }
        this.http = builder
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofMillis(timeoutMs))
            .proxy(HttpClient.Builder.NO_PROXY)
            .followRedirects(HttpClient.Redirect.NEVER)
            .build();
    }

    /** Where a command writes and what it reads from its surroundings; tests pass their own. */
    record Io(PrintStream out, PrintStream err, Map<String, String> env, Path workDir)
    {
    }

    /** A failure already phrased for the operator: one line, and the exit status it ends with. */
    static final class Failure extends Exception
    {
        private static final long serialVersionUID = 1L;

        final int exitStatus;

        Failure(final int exitStatus, final String message)
        {
            super(Output.oneLine(message), null, false, false);
            this.exitStatus = exitStatus;
        }
    }

    /** Bad input: rejected before any call. */
    static Failure usage(final String message)
    {
        return new Failure(USAGE, message);
    }

    /** The API refused, or no node answered. */
    static Failure failed(final String message)
    {
        return new Failure(FAILED, message);
    }

    /** The options every admin command takes (a picocli mixin). */
    static final class Options
    {
        /** A single node's admin port, then the three of {@code ./limiter cluster}. */
        static final String DEFAULT_ADMIN = "127.0.0.1:7480,127.0.0.1:7481,127.0.0.1:7482,127.0.0.1:7483";

        @Option(names = "--admin", split = ",", paramLabel = "HOST:PORT",
            defaultValue = DEFAULT_ADMIN,
            description = "Admin HTTP address(es) of the nodes, tried in order: one that refuses the connection, times out, "
                + "or is not the leader (for a change) passes the call to the next (default: ${DEFAULT-VALUE}).")
        List<String> admin;

        @Option(names = "--token", paramLabel = "TOKEN",
            description = "Admin API token (default: $LIMITER_ADMIN_TOKEN, else data/admin-token, else data/node/admin-token).")
        String token;

        @Option(names = "--actor", paramLabel = "NAME", defaultValue = "${sys:user.name:-unknown}",
            description = "Who makes the change, as the audit log records it (default: ${DEFAULT-VALUE}).")
        String actor;

        @Option(names = "--timeout-ms", paramLabel = "MS", defaultValue = "3000",
            description = "Connect and answer timeout per node (default: ${DEFAULT-VALUE}).")
        int timeoutMs;

        @Option(names = "--json", description = "Print the API's answer as one JSON document instead of text.")
        boolean json;

        /** HTTPS to the admin ports (also implied by https:// addresses). */
        @picocli.CommandLine.Mixin
        TlsOptions tls = new TlsOptions();

        /** Checks the options and finds the token; nothing is sent yet. */
        AdminClient connect(final Io io) throws Failure
        {
            if (timeoutMs < 1)
            {
                throw usage("--timeout-ms must be 1 or more, was " + timeoutMs);
            }
            if (actor == null || actor.isBlank())
            {
                throw usage("--actor is empty: name who makes the change (the audit log records it)");
            }
            final boolean https = tls.requested() || admin.stream().anyMatch(a -> a.strip().startsWith("https://"));
            final List<String> bases = new ArrayList<>();
            for (final String address : admin)
            {
                bases.add(base(address, https));
            }
            final SSLContext context = https ? tls.context() : null;
            if (bases.isEmpty())
            {
                throw usage("--admin is empty: give the admin HTTP address of at least one node, e.g. 127.0.0.1:7481");
            }
            final Token found = resolveToken(token, io.env(), io.workDir());
            return new AdminClient(List.copyOf(bases), found.value(), found.source(), actor.strip(), timeoutMs,
                context);
        }
    }

    /** The admin token and where it came from (named in the advice on a 401). */
    record Token(String value, String source)
    {
    }

    /**
     * The admin token: --token, then {@value #TOKEN_ENVIRONMENT}, then the first readable, non-empty
     * file of {@link #TOKEN_FILES}.
     */
    static Token resolveToken(final String option, final Map<String, String> env, final Path workDir) throws Failure
    {
        if (option != null)
        {
            if (option.isBlank())
            {
                throw usage("--token is empty: pass the cluster's admin token (it is in data/admin-token)");
            }
            return new Token(option.strip(), "--token");
        }
        final String fromEnvironment = env.get(TOKEN_ENVIRONMENT);
        // An empty variable (LIMITER_ADMIN_TOKEN= ./limiter ...) counts as unset, as on the nodes.
        if (fromEnvironment != null && !fromEnvironment.isBlank())
        {
            return new Token(fromEnvironment.strip(), TOKEN_ENVIRONMENT);
        }
        for (final String name : TOKEN_FILES)
        {
            final Path file = workDir.resolve(name);
            if (!Files.isReadable(file))
            {
                continue;
            }
            requirePrivate(file, name);
            try
            {
                final String fromFile = Files.readString(file, StandardCharsets.UTF_8).strip();
                if (!fromFile.isEmpty())
                {
                    return new Token(fromFile, name);
                }
            }
            catch (final IOException unreadable)
            {
                // As if absent: the next source may do.
            }
        }
        throw usage("no admin token: pass --token TOKEN, set " + TOKEN_ENVIRONMENT +
            ", or run from the directory holding data/admin-token (./limiter cluster writes it there)");
    }

    /** A token file others can read is refused, as ssh refuses such a key (the nodes do the same). */
    private static void requirePrivate(final Path file, final String name) throws Failure
    {
        final Set<PosixFilePermission> permissions;
        try
        {
            permissions = Files.getPosixFilePermissions(file);
        }
        catch (final UnsupportedOperationException | IOException notPosix)
        {
            return;
        }
        if (permissions.stream().anyMatch(p -> p.name().startsWith("GROUP_") && !p.name().endsWith("EXECUTE") ||
            p.name().startsWith("OTHERS_") && !p.name().endsWith("EXECUTE")))
        {
            throw usage(name + " is accessible by others (" + PosixFilePermissions.toString(permissions) +
                "): a token anybody on this host can read is no credential; chmod 600 " + name
                    + " (or pass --token / " +
                TOKEN_ENVIRONMENT + ")");
        }
    }

    private static String base(final String address, final boolean https) throws Failure
    {
        // "http://host:port/" as copied from a browser works too.
        final String trimmed = address.strip();
        if (https && trimmed.startsWith("http://"))
        {
            throw usage("--admin '" + address
                + "' says http:// but TLS is on (--tls-ca, --tls-cert or an https:// address): use https://");
        }
        final String scheme = https ? "https://" : "http://";
        final String hostPort = (trimmed.startsWith("http://") || trimmed.startsWith("https://") ?
            trimmed.substring(trimmed.indexOf("//") + 2) : trimmed).replaceAll("/+$", "");
        try
        {
            final URI uri = new URI("http://" + hostPort);
            if (uri.getHost() != null && uri.getPort() > 0 && uri.getRawPath().isEmpty() && uri.getRawQuery() == null &&
                uri.getRawUserInfo() == null)
            {
                return scheme + hostPort;
            }
        }
        catch (final URISyntaxException e)
        {
            // Reported below, the same as a missing port.
        }
        throw usage("--admin '" + address + "' is not HOST:PORT (e.g. 127.0.0.1:7481)");
    }

    /** One answer of the admin API: its status, body and the address that gave it. */
    record Answer(int status, String body, String address)
    {
    }

    /**
     * Sends one call, node after node, and parses a 2xx answer into {@code prototype}'s type.
     *
     * @throws Failure when the API refused (any non-2xx answer) or no node took the call
     */
    @SuppressWarnings("unchecked")
    <T extends Message> T call(final String method, final String pathAndQuery, final Message body, final T prototype)
        throws Failure
    {
        final Answer answer = exchange(method, pathAndQuery, body == null ? null : compactJson(body));
        if (answer.status() / 100 != 2)
        {
            throw rejection(answer);
        }
        final Message.Builder builder = prototype.newBuilderForType();
        try
        {
            JsonFormat.parser().ignoringUnknownFields().merge(answer.body(), builder);
        }
        catch (final InvalidProtocolBufferException | RuntimeException e)
        {
            throw failed("unexpected answer from " + answer.address() + " (HTTP " + answer.status() + "): not a " +
                prototype.getDescriptorForType().getName() + " document (" + e.getMessage() +
                "); is that a limiter node's admin port?");
        }
        return (T) builder.build();
    }

    /**
     * A GET of a document that is not a protobuf message (the decision, appeal and compare routes):
     * the first node's answer whatever its status, so that a caller can tell 404 from the rest
     * ({@link #refused}).
     *
     * @throws Failure when no node answered
     */
    Answer get(final String pathAndQuery) throws Failure
    {
        return exchange("GET", pathAndQuery, null);
    }

    /** The failure an answer that is not 2xx stands for, with the API's own message. */
    Failure refused(final Answer answer)
    {
        return rejection(answer);
    }

    private Answer exchange(final String method, final String pathAndQuery, final String body) throws Failure
    {
        final List<String> misses = new ArrayList<>();
        boolean notLeader = false;
        for (final String base : addresses)
        {
            final String address = base.substring(base.indexOf("//") + 2);
            final HttpRequest request;
            try
            {
                final HttpRequest.Builder builder = HttpRequest.newBuilder(URI.create(base + pathAndQuery))
                    .timeout(Duration.ofMillis(timeoutMs))
                    .header("Authorization", "Bearer " + token)
                    .header("X-Limiter-Actor", actor)
                    .header("Accept", "application/json");
                if (body == null)
                {
                    builder.method(method, HttpRequest.BodyPublishers.noBody());
                }
                else
                {
                    builder.header("Content-Type", "application/json")
                        .method(method, HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
                }
                request = builder.build();
            }
            catch (final IllegalArgumentException e)
            {
                throw usage("cannot send the call: " + e.getMessage()
                    + " (check --actor and the token for characters HTTP headers cannot carry)");
            }
            try
            {
                final HttpResponse<String> response = http.send(request,
                    HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
                if (response.statusCode() == NOT_LEADER)
                {
                    // A follower got a change: the leader is further down the list, we hope.
                    notLeader = true;
                    final AdminError error = adminError(response.body());
                    misses.add(address + " is not the leader" +
                        (error != null && !error.getLeader().isEmpty() ? " (leader: " + error.getLeader() + ")" : ""));
                    continue;
                }
                return new Answer(response.statusCode(), response.body(), address);
            }
            catch (final HttpConnectTimeoutException e)
            {
                misses.add(address + " did not accept a connection within " + timeoutMs + " ms"); // nothing was sent
            }
            catch (final HttpTimeoutException e)
            {
                if (!"GET".equals(method))
                {
                    // The change was sent: passing it to another node could apply it twice.
                    throw failed(address + " did not answer within " + timeoutMs + " ms; the change may or may not " +
                        "have been applied: check ./limiter audit (or policy history) before retrying");
                }
                misses.add(address + " did not answer within " + timeoutMs + " ms");
            }
            catch (final ConnectException e)
            {
                misses.add(address + " refused the connection");
            }
            catch (final IOException e)
            {
                misses.add(address + " failed (" + e.getClass().getSimpleName() + (e.getMessage() == null ? ""
                    : ": " + e.getMessage()) + ")");
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
                throw failed("interrupted; the call may or may not have been made (check ./limiter audit)");
            }
        }
        if (notLeader)
        {
            throw failed("no node took the change: " + String.join("; ", misses) +
                ". Give --admin the admin address of every member, the leader's included (./limiter cluster: 127.0.0.1:7481-7483)");
        }
        throw failed("no admin endpoint answered: " + String.join("; ", misses) +
            ". Is the cluster running (./limiter cluster)? Otherwise point --admin at a node's admin HTTP address");
    }

    /** The message of an answer's AdminError, or null when the body is none. */
    static String errorMessage(final Answer answer)
    {
        final AdminError error = adminError(answer.body());
        return error == null || error.getError().isBlank() ? null : error.getError().strip();
    }

    private Failure rejection(final Answer answer)
    {
        final AdminError error = adminError(answer.body());
        final StringBuilder message = new StringBuilder();
        if (error != null && !error.getError().isBlank())
        {
            message.append(error.getError().strip());
            if (error.getErrorsCount() > 0)
            {
                message.append(": ").append(String.join("; ", error.getErrorsList()));
            }
        }
        else
        {
            // Not an AdminError: an old node, or not a limiter node at all. Show the start of what it said.
            final String said = answer.body() == null ? "" : Output.oneLine(answer.body());
            message.append("unexpected answer").append(said.isEmpty() ? "" : ": " + (said.length() > 160
                ? said.substring(0, 160) + "..." : said));
        }
        message.append(" (HTTP ").append(answer.status()).append(" from ").append(answer.address()).append(')');
        switch (answer.status())
        {
            case 401 -> message.append("; the token came from ").append(tokenSource)
                .append(": pass the cluster's token with --token, " + TOKEN_ENVIRONMENT + " or data/admin-token");
            case 503 -> message.append("; no leader can take the change now: check ./limiter status and retry");
            default ->
            {
                // The API's own message says what to do.
            }
        }
        return failed(message.toString());
    }

    private static AdminError adminError(final String body)
    {
        if (body == null || body.isBlank())
        {
            return null;
        }
        try
        {
            final AdminError.Builder builder = AdminError.newBuilder();
            JsonFormat.parser().ignoringUnknownFields().merge(body, builder);
            return builder.build();
        }
        catch (final InvalidProtocolBufferException | RuntimeException notJson)
        {
            return null;
        }
    }

    /**
     * Runs a picocli command with every failure reported as one line on {@code io.err()} behind
     * {@code prefix} (e.g. "limiter policy: ").
     *
     * @return the exit status: 0, {@link #FAILED} or {@link #USAGE}
     */
    static int execute(final Object command, final String prefix, final String[] args, final Io io)
    {
        final PrintWriter out = new PrintWriter(new OutputStreamWriter(io.out(), StandardCharsets.UTF_8), true);
        final PrintWriter err = new PrintWriter(new OutputStreamWriter(io.err(), StandardCharsets.UTF_8), true);
        final CommandLine commandLine = new CommandLine(command)
            .setOut(out)
            .setErr(err)
            .setParameterExceptionHandler((e, arguments) ->
            {
                // One line instead of picocli's message plus the whole usage text.
                err.println(prefix + Output.oneLine(e.getMessage()) + " (see ./limiter " +
                    e.getCommandLine().getCommandSpec().qualifiedName() + " --help)");
                return USAGE;
            })
            .setExecutionExceptionHandler((e, failedCommand, parseResult) ->
            {
                if (e instanceof Failure failure)
                {
                    err.println(prefix + failure.getMessage());
                    return failure.exitStatus;
                }
                err.println(prefix + "unexpected " + e.getClass().getSimpleName() + ": "
                    + Output.oneLine(String.valueOf(e.getMessage())));
                return FAILED;
            });
        try
        {
            return commandLine.execute(args);
        }
        finally
        {
            out.flush();
            err.flush();
            io.out().flush();
            io.err().flush();
        }
    }

    private static String compactJson(final MessageOrBuilder message)
    {
        try
        {
            return JsonFormat.printer().omittingInsignificantWhitespace().print(message);
        }
        catch (final InvalidProtocolBufferException e)
        {
            throw new IllegalStateException(e);
        }
    }

    /** One URL path segment or query value, percent-encoded (a space as %20, which every decoder reads). */
    static String encode(final String text)
    {
        return URLEncoder.encode(text, StandardCharsets.UTF_8).replace("+", "%20");
    }

    /** A required argument, stripped; a usage failure naming what is missing when it is blank. */
    static String required(final String value, final String whenEmpty) throws Failure
    {
        if (value == null || value.isBlank())
        {
            throw usage(whenEmpty);
        }
        return value.strip();
    }

    /** The {@code --reason} every change needs. */
    static String reason(final String reason) throws Failure
    {
        return required(reason, "--reason is empty: say why (the audit log keeps it)");
    }
}
