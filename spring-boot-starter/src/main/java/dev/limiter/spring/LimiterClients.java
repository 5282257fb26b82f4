package dev.limiter.spring;

import dev.limiter.client.LimiterClient;

import java.util.List;

/** Builds the application's {@link LimiterClient} from {@code limiter.*}, refusing settings it cannot use by name. */
final class LimiterClients
{
    private LimiterClients()
    {
    }

    static LimiterClient build(final LimiterProperties properties)
    {
        final List<String> endpoints = properties.getEndpoints().stream().map(String::trim).filter(e -> !e.isEmpty())
            .toList();
        if (endpoints.isEmpty())
        {
            throw new IllegalArgumentException("limiter.endpoints names no node: give host:port of each");
        }
        final LimiterClient.Builder builder = LimiterClient.builder().endpoints(endpoints.toArray(String[]::new));
        if (properties.getDeadline() != null)
        {
            builder.deadline(properties.getDeadline());
        }
        if (properties.getConnections() != null)
        {
            builder.connections(properties.getConnections());
        }
        if (properties.getStartupTimeout() != null)
        {
            builder.startupTimeout(properties.getStartupTimeout());
        }
        final LimiterProperties.Tls tls = properties.getTls();
        if (tls.getCaBundle() != null)
        {
            builder.tls(tls.getCaBundle());
            if (tls.getCertificate() != null || tls.getKey() != null)
            {
                if (tls.getCertificate() == null || tls.getKey() == null)
                {
                    throw new IllegalArgumentException("limiter.tls.certificate and limiter.tls.key go together: " +
                        "one of them is missing");
                }
                builder.tlsClientCertificate(tls.getCertificate(), tls.getKey());
            }
        }
        else if (tls.getCertificate() != null || tls.getKey() != null)
        {
            throw new IllegalArgumentException("limiter.tls.certificate and limiter.tls.key need " +
                "limiter.tls.ca-bundle (the CAs of the nodes' certificates)");
        }
        return builder.build();
    }
}
