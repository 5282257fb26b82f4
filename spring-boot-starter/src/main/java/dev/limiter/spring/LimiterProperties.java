package dev.limiter.spring;

import org.springframework.boot.context.properties.ConfigurationProperties;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code limiter.*}: where the nodes are and how the client talks to them, and how web requests are
 * named to the limiter. Unset values keep the SDK's defaults (docs/sdk.md).
 */
@ConfigurationProperties(prefix = "limiter")
public class LimiterProperties
{
    /** The nodes' data addresses, host:port. Without any, nothing is configured. */
    private List<String> endpoints = new ArrayList<>();
    /** The longest a call waits for a node before the SDK decides locally (SDK default 20 ms). */
    private Duration deadline;
    /** Connections per endpoint (SDK default 2). */
    private Integer connections;
    /** How long startup waits for a first connection and policy set (SDK default 2 s). */
    private Duration startupTimeout;
    private final Tls tls = new Tls();
    private final Web web = new Web();
    private final Health health = new Health();

    public List<String> getEndpoints()
    {
        return endpoints;
    }

    public void setEndpoints(final List<String> endpoints)
    {
        this.endpoints = endpoints;
    }

    public Duration getDeadline()
    {
        return deadline;
    }

    public void setDeadline(final Duration deadline)
    {
        this.deadline = deadline;
    }

    public Integer getConnections()
    {
        return connections;
    }

    public void setConnections(final Integer connections)
    {
        this.connections = connections;
    }

    public Duration getStartupTimeout()
    {
        return startupTimeout;
    }

    public void setStartupTimeout(final Duration startupTimeout)
    {
        this.startupTimeout = startupTimeout;
    }

    public Tls getTls()
    {
        return tls;
    }

    public Web getWeb()
    {
        return web;
    }

    public Health getHealth()
    {
        return health;
    }

    /** {@code limiter.tls.*}: TLS to the nodes (off unless a CA bundle is named). */
    public static class Tls
    {
        /** PEM bundle of the CAs that sign the nodes' certificates; turns TLS on. */
        private Path caBundle;
        /** PEM certificate of this client, for nodes that require client certificates (with key). */
        private Path certificate;
        /** PEM PKCS#8 key of that certificate. */
        private Path key;

        public Path getCaBundle()
        {
            return caBundle;
        }

        public void setCaBundle(final Path caBundle)
        {
            this.caBundle = caBundle;
        }

        public Path getCertificate()
        {
            return certificate;
        }

        public void setCertificate(final Path certificate)
        {
            this.certificate = certificate;
        }

        public Path getKey()
        {
            return key;
        }

        public void setKey(final Path key)
        {
            this.key = key;
        }
    }

    /** {@code limiter.web.*}: the servlet filter (MVC) or WebFilter (WebFlux) and how it names requests. */
    public static class Web
    {
        /** Whether the filter is registered (default true). */
        private boolean enabled = true;
        /**
         * The header naming the tenant (default none: the client address is every request's tenant).
         * Name one only when a proxy you trust sets it and drops what the client sent: any client can
         * send any value, so it could pick a fresh bucket for each request or spend another tenant's.
         */
        private String tenantHeader;
        /** The header naming the principal within the tenant (default none). */
        private String principalHeader;
        /**
         * A header with the client's address, of which the last entry counts (X-Forwarded-For from the one
         * proxy you trust); default none: the connection's remote address.
         */
        private String clientIpHeader;
        /** Tokens each request costs (default 1). */
        private int cost = 1;

        public boolean isEnabled()
        {
            return enabled;
        }

        public void setEnabled(final boolean enabled)
        {
            this.enabled = enabled;
        }

        public String getTenantHeader()
        {
            return tenantHeader;
        }

        public void setTenantHeader(final String tenantHeader)
        {
            this.tenantHeader = tenantHeader;
        }

        public String getPrincipalHeader()
        {
            return principalHeader;
        }

        public void setPrincipalHeader(final String principalHeader)
        {
            this.principalHeader = principalHeader;
        }

        public String getClientIpHeader()
        {
            return clientIpHeader;
        }

        public void setClientIpHeader(final String clientIpHeader)
        {
            this.clientIpHeader = clientIpHeader;
        }

        public int getCost()
        {
            return cost;
        }

        public void setCost(final int cost)
        {
            this.cost = cost;
        }
    }

    /** {@code limiter.health.*}: the actuator health indicator. */
    public static class Health
    {
        /** How long the indicator waits for a node's answer to its PING (default 500 ms). */
        private Duration timeout = Duration.ofMillis(500);

        public Duration getTimeout()
        {
            return timeout;
        }

        public void setTimeout(final Duration timeout)
        {
            this.timeout = timeout;
        }
    }
}
