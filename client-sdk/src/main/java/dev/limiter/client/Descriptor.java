package dev.limiter.client;

import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.DescriptorField;
import dev.limiter.protocol.DescriptorRules;
import dev.limiter.protocol.FieldProblem;
import dev.limiter.protocol.ShardMap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;
import java.util.Objects;

/**
 * Who is asking, for what: tenant, principal, method, route, client IP and region. Built once and
 * reused: normalisation (the same rules the server applies, see {@link DescriptorRules}) and
 * encoding happen at {@link Builder#build()}, so sending it costs a byte copy.
 *
 * <pre>{@code
 * Descriptor d = Descriptor.builder().tenant("acme").route("/v1/orders/123").method("post").build();
 * }</pre>
 */
public final class Descriptor
{
    private final String tenant;
    private final String principal;
    private final String method;
    private final String route;
    private final String clientIp;
    private final String region;
    private final byte[] encoded;
    /** What places the tenant's buckets on a shard ({@link ShardMap#tenantHash}); 0 without a tenant. */
    private final long tenantHash;
    /** Of {@link #encoded}, made once: every call looks its descriptor up in the SDK's refusal table. */
    private final int hash;
    /** The SDK token lease this descriptor decides from, with the policy set version it was found under ({@link TokenLeases}). */
    volatile Object tokenLease;
    /**
     * The stamp of one client's compiled policy set under which this descriptor's policy leases no
     * tokens (0: none known). Checked before {@link #tokenLease}: most routes lease nothing, and a
     * service with many descriptors would otherwise read one more cold object on every call.
     */
    volatile long leasesNothingUnder;

    private Descriptor(final String[] values)
    {
        this.tenant = values[0];
        this.principal = values[1];
        this.method = values[2];
        this.route = values[3];
        this.clientIp = values[4];
        this.region = values[5];
        this.encoded = AcquireCodec.encodeFields(tenant, principal, method, route, clientIp, region);
        this.tenantHash = tenant.isEmpty() ? 0 : ShardMap.tenantHash(tenant.getBytes(StandardCharsets.UTF_8));
        this.hash = Arrays.hashCode(encoded);
    }

    public static Builder builder()
    {
        return new Builder();
    }

    /** Shorthand for a descriptor with only tenant and route. */
    public static Descriptor of(final String tenant, final String route)
    {
        return builder().tenant(tenant).route(route).build();
    }

    public String tenant()
    {
        return tenant;
    }

    /** Empty when not set. */
    public String principal()
    {
        return principal;
    }

    /** Upper case; empty when not set. */
    public String method()
    {
        return method;
    }

    /** The path as normalised: no query or fragment, no empty segments. */
    public String route()
    {
        return route;
    }

    public String clientIp()
    {
        return clientIp;
    }

    public String region()
    {
        return region;
    }

    byte[] encoded()
    {
        return encoded;
    }

    long tenantHash()
    {
        return tenantHash;
    }

    @Override
    public boolean equals(final Object o)
    {
        return this == o || (o instanceof Descriptor && hash == ((Descriptor)o).hash && Arrays.equals(encoded, ((Descriptor)o).encoded));
    }

    @Override
    public int hashCode()
    {
        return hash;
    }

    @Override
    public String toString()
    {
        return "Descriptor{tenant=" + tenant + ", principal=" + principal + ", method=" + method + ", route=" + route +
            ", clientIp=" + clientIp + ", region=" + region + '}';
    }

    /** Collects fields; {@link #build()} validates them all. */
    public static final class Builder
    {
        private final String[] values = { "", "", "", "", "", "" };

        public Builder tenant(final String tenant)
        {
            return set(DescriptorField.TENANT, tenant);
        }

        public Builder principal(final String principal)
        {
            return set(DescriptorField.PRINCIPAL, principal);
        }

        public Builder method(final String method)
        {
            return set(DescriptorField.METHOD, method);
        }

        /** A concrete path such as {@code /v1/orders/123?x=1}; the server maps it to its policy's template. */
        public Builder route(final String route)
        {
            return set(DescriptorField.ROUTE, route);
        }

        public Builder clientIp(final String clientIp)
        {
            return set(DescriptorField.CLIENT_IP, clientIp);
        }

        public Builder region(final String region)
        {
            return set(DescriptorField.REGION, region);
        }

        private Builder set(final DescriptorField field, final String value)
        {
            values[field.ordinal()] = value == null ? "" : value;
            return this;
        }

        /**
         * Normalises and validates every field.
         *
         * @throws InvalidDescriptorException naming the field and what is wrong with it
         */
        public Descriptor build()
        {
            final String[] normalised = new String[values.length];
            for (final DescriptorField field : DescriptorField.values())
            {
                normalised[field.ordinal()] = normalise(field, values[field.ordinal()]);
            }
            return new Descriptor(normalised);
        }
    }

    static String normalise(final DescriptorField field, final String raw)
    {
        final byte[] bytes;
        try
        {
            bytes = encodeStrict(raw);
        }
        catch (final CharacterCodingException e)
        {
            throw new InvalidDescriptorException(field, FieldProblem.INVALID_UTF8.describe(field, 0) +
                " (an unpaired surrogate in the string)");
        }
        final ByteBuf view = Unpooled.wrappedBuffer(bytes);
        final int start = DescriptorRules.trimStart(view, 0, bytes.length);
        final int end = DescriptorRules.trimEnd(view, start, bytes.length);
        final FieldProblem problem = DescriptorRules.check(field, view, start, end - start);
        if (problem != FieldProblem.NONE)
        {
            throw new InvalidDescriptorException(field, problem.describe(field, end - start));
        }
        final String value = new String(bytes, start, end - start, StandardCharsets.UTF_8);
        switch (field)
        {
            case METHOD:
                return value.toUpperCase(Locale.ROOT);
            case CLIENT_IP:
            case REGION:
                return value.toLowerCase(Locale.ROOT);
            case ROUTE:
                final int pathLength = DescriptorRules.routePathLength(view, start, end - start);
                final StringBuilder canonical = new StringBuilder(pathLength);
                for (final String segment : new String(bytes, start, pathLength, StandardCharsets.UTF_8).split("/"))
                {
                    if (!segment.isEmpty())
                    {
                        canonical.append('/').append(segment);
                    }
                }
                return canonical.length() == 0 ? "/" : canonical.toString();
            default:
                return value;
        }
    }

    private static byte[] encodeStrict(final String value) throws CharacterCodingException
    {
        final ByteBuffer out = StandardCharsets.UTF_8.newEncoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT)
            .encode(CharBuffer.wrap(Objects.requireNonNull(value)));
        final byte[] bytes = new byte[out.remaining()];
        out.get(bytes);
        return bytes;
    }
}
