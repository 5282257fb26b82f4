package dev.limiter.servlet;

import dev.limiter.client.Decision;
import dev.limiter.client.Descriptor;
import dev.limiter.client.InvalidDescriptorException;
import dev.limiter.client.LimiterClient;
import dev.limiter.client.LimiterException;
import dev.limiter.client.LimiterRequestException;
import dev.limiter.client.RateLimitHeaders;
import dev.limiter.protocol.ReasonCode;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;

/**
 * A Jakarta Servlet filter (Servlet 6: Tomcat 10.1+, Jetty 12 ee10, Spring Boot 3) that asks the
 * limiter before every request it filters: allowed requests go on down the chain with
 * {@code RateLimit-Policy} and {@code RateLimit} headers; refused ones are answered here, the
 * application never sees them:
 * <ul>
 * <li>429 Too Many Requests with {@code Retry-After} (whole seconds, rounded up) and the RateLimit
 * headers, when a policy refuses;</li>
 * <li>503 Service Unavailable with {@code Retry-After: 1} when the cluster is unreachable and the
 * policy fails closed ({@code CLUSTER_UNAVAILABLE}), or no decision could be had at all (no node
 * answered and the SDK could not decide: the SDK's exception message is the body);</li>
 * <li>400 Bad Request when the request carries a field the limiter cannot use (a tenant header of
 * control characters or beyond the descriptor's limits), naming the field, or lacks one a policy
 * needs (a PRINCIPAL-scoped policy and no principal), as the node says.</li>
 * </ul>
 * The call blocks the request thread for at most the SDK's deadline (a fail-open policy's local
 * decision if no node answers in time). Bodies are {@code text/plain}, one line.
 *
 * <p>Two ways to set it up: programmatically, with a client the application owns
 * ({@code new LimiterFilter(client, RequestDescriptors.fromHeaders("X-Tenant-Id", null, null))},
 * e.g. in a Spring {@code FilterRegistrationBean}), or by class name (web.xml, Jetty's
 * {@code FilterHolder}) with init parameters, when the filter builds and closes its own client:
 * {@value #ENDPOINTS} (required: {@code host:port,...}), {@value #TENANT_HEADER},
 * {@value #PRINCIPAL_HEADER} and {@value #CLIENT_IP_HEADER} (default none: without a tenant header
 * each client address is a tenant, since a client can put any value in a header; name one only a
 * trusted proxy sets), {@value #DEADLINE_MILLIS} (default the SDK's) and {@value #COST} (tokens per
 * request, default 1).
 */
public final class LimiterFilter implements Filter
{
    /** Init parameter: the store nodes' data addresses, {@code host:port,host:port}. */
    public static final String ENDPOINTS = "limiter.endpoints";
    /** Init parameter: the header naming the tenant, set by a proxy you trust (default none: the client address). */
    public static final String TENANT_HEADER = "limiter.tenantHeader";
    /** Init parameter: the header naming the principal (user) within the tenant. */
    public static final String PRINCIPAL_HEADER = "limiter.principalHeader";
    /** Init parameter: a header with the client's address, first of a list (e.g. X-Forwarded-For from a trusted proxy). */
    public static final String CLIENT_IP_HEADER = "limiter.clientIpHeader";
    /** Init parameter: the longest a request waits for the limiter, milliseconds. */
    public static final String DEADLINE_MILLIS = "limiter.deadlineMillis";
    /** Init parameter: tokens each request costs. */
    public static final String COST = "limiter.cost";

    private LimiterClient client;
    private RequestDescriptors descriptors;
    private int cost = 1;
    /** Whether this filter built the client (and closes it in {@link #destroy}). */
    private boolean ownsClient;

    /** For containers that create filters by class name: configured by init parameters. */
    public LimiterFilter()
    {
    }

    /**
     * @param client      a client the application keeps (and closes) itself
     * @param descriptors how requests are named to the limiter
     */
    public LimiterFilter(final LimiterClient client, final RequestDescriptors descriptors)
    {
        if (client == null || descriptors == null)
        {
            throw new IllegalArgumentException("a LimiterFilter needs a client and a RequestDescriptors rule");
        }
        this.client = client;
        this.descriptors = descriptors;
    }

    /** Tokens each request costs (default 1). */
    public LimiterFilter cost(final int tokens)
    {
        if (tokens < 1)
        {
            throw new IllegalArgumentException("a request costs at least 1 token, was " + tokens);
        }
        this.cost = tokens;
        return this;
    }

    @Override
    public void init(final FilterConfig config) throws ServletException
    {
        if (client != null)
        {
            return; // built programmatically
        }
        final String endpoints = config.getInitParameter(ENDPOINTS);
        if (endpoints == null || endpoints.isBlank())
        {
            throw new ServletException("LimiterFilter: init parameter " + ENDPOINTS + " is required: the store nodes' data " +
                "addresses, e.g. 10.0.0.1:7400,10.0.0.2:7400");
        }
        final String tenantHeader = parameter(config, TENANT_HEADER, null);
        try
        {
            descriptors = RequestDescriptors.fromHeaders(tenantHeader, config.getInitParameter(PRINCIPAL_HEADER),
                config.getInitParameter(CLIENT_IP_HEADER));
            cost(positive(config, COST, 1));
            final LimiterClient.Builder builder = LimiterClient.builder().endpoints(endpoints.split(","));
            final String deadline = config.getInitParameter(DEADLINE_MILLIS);
            if (deadline != null)
            {
                builder.deadline(Duration.ofMillis(positive(config, DEADLINE_MILLIS, 0)));
            }
            client = builder.build();
            ownsClient = true;
        }
        catch (final IllegalArgumentException | LimiterException e)
        {
            throw new ServletException("LimiterFilter: " + e.getMessage(), e);
        }
    }

    private static String parameter(final FilterConfig config, final String name, final String otherwise)
    {
        final String value = config.getInitParameter(name);
        return value == null || value.isBlank() ? otherwise : value.trim();
    }

    private static int positive(final FilterConfig config, final String name, final int otherwise)
    {
        final String value = parameter(config, name, null);
        if (value == null)
        {
            return otherwise;
        }
        try
        {
            final int parsed = Integer.parseInt(value);
            if (parsed >= 1)
            {
                return parsed;
            }
        }
        catch (final NumberFormatException e)
        {
            // said below
        }
        throw new IllegalArgumentException("init parameter " + name + " must be a whole number of at least 1, was '" + value + "'");
    }

    @Override
    public void doFilter(final ServletRequest request, final ServletResponse response, final FilterChain chain)
        throws IOException, ServletException
    {
        if (!(request instanceof HttpServletRequest http) || !(response instanceof HttpServletResponse answer))
        {
            chain.doFilter(request, response);
            return;
        }
        if (client == null)
        {
            throw new ServletException("LimiterFilter was not initialised (init was not called, or failed)");
        }
        final Descriptor descriptor;
        try
        {
            descriptor = descriptors.describe(http);
        }
        catch (final InvalidDescriptorException e)
        {
            respond(answer, HttpServletResponse.SC_BAD_REQUEST, Map.of(), "request refused by the rate limiter: " + e.getMessage());
            return;
        }
        if (descriptor == null)
        {
            chain.doFilter(request, response);
            return;
        }
        final Decision decision;
        try
        {
            decision = client.acquireBlocking(descriptor, cost);
        }
        catch (final LimiterRequestException e)
        {
            // The node refused the request itself (a policy needs a field this request lacks): retrying cannot help.
            respond(answer, HttpServletResponse.SC_BAD_REQUEST, Map.of(), "request refused by the rate limiter: " + e.getMessage());
            return;
        }
        catch (final LimiterException e)
        {
            respond(answer, HttpServletResponse.SC_SERVICE_UNAVAILABLE, Map.of("Retry-After", "1"),
                "the rate limiter could not decide: " + e.getMessage());
            return;
        }
        final Map<String, String> headers = RateLimitHeaders.of(decision);
        if (decision.allowed())
        {
            headers.forEach(answer::setHeader);
            chain.doFilter(request, response);
            return;
        }
        if (decision.reason() == ReasonCode.CLUSTER_UNAVAILABLE)
        {
            respond(answer, HttpServletResponse.SC_SERVICE_UNAVAILABLE, Map.of("Retry-After", "1"),
                "the rate limiter is unreachable and policy " + decision.policyId() + " refuses requests then (fail-closed)");
            return;
        }
        final long retryAfter = RateLimitHeaders.retryAfterSeconds(decision);
        respond(answer, RateLimitHeaders.TOO_MANY_REQUESTS, headers, "rate limited by policy " + decision.policyId() +
            (retryAfter > 0 ? "; retry after " + retryAfter + " s" : "; this request can never fit its limit"));
    }

    private static void respond(final HttpServletResponse response, final int status, final Map<String, String> headers,
        final String message) throws IOException
    {
        response.setStatus(status);
        headers.forEach(response::setHeader);
        response.setContentType("text/plain;charset=utf-8");
        final byte[] body = (message + "\n").getBytes(StandardCharsets.UTF_8);
        response.setContentLength(body.length);
        response.getOutputStream().write(body);
    }

    @Override
    public void destroy()
    {
        if (ownsClient && client != null)
        {
            client.close();
        }
    }
}
