package dev.limiter.client;

import dev.limiter.protocol.AcquireCodec;
import dev.limiter.protocol.DescriptorField;
import dev.limiter.protocol.DescriptorRules;
import dev.limiter.protocol.EnvoyDescriptors;
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
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Who is asking, for what: tenant, principal, method, route, client IP and region. Normalisation
 * (the same rules the server applies, see {@link DescriptorRules}) and encoding happen at
 * {@link Builder#build()}, so sending it costs a byte copy. Reuse one where the fields repeat (the
 * SDK also remembers, per descriptor, whether its route is leased and, with several Raft groups,
 * its shard); building one per request is fine too (a few hundred nanoseconds:
 * {@code ./limiter jmh DescriptorBenchmark}).
 *
 * <pre>{@code
 * Descriptor d = Descriptor.builder().tenant("acme").route("/v1/orders/123").method("post").build();
 * }</pre>
 */
public final class Descriptor implements Comparable<Descriptor>
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
    /** The SDK token lease this descriptor decides from, with the policy set version it was found under ({@link TokenBlocks}). */
    volatile Object tokenLease;
    /**
     * The stamp of one client's compiled policy set under which this descriptor's policy leases no
     * tokens (0: none known). Checked before {@link #tokenLease}: most routes lease nothing, and a
     * service with many descriptors would otherwise read one more cold object on every call.
     */
    volatile long leasesNothingUnder;
    /**
     * Where one client's shard router last placed this descriptor's bucket, under which of its
     * routings ({@link ShardRouter}: stamp and shard in one word, so that no reader sees one
     * without the other; 0: not placed).
     */
    volatile long shardUnder;

    private Descriptor(final String[] values)
    {
        this(values, AcquireCodec.encodeFields(values[0], values[1], values[2], values[3], values[4], values[5]));
    }

    private Descriptor(final String[] values, final byte[] encoded)
    {
        this.tenant = values[0];
        this.principal = values[1];
        this.method = values[2];
        this.route = values[3];
        this.clientIp = values[4];
        this.region = values[5];
        this.encoded = encoded;
        this.tenantHash = tenant.isEmpty() ? 0 : ShardMap.tenantHash(tenant.getBytes(StandardCharsets.UTF_8));
        this.hash = Arrays.hashCode(encoded);
    }

    public static Builder builder()
    {
        return new Builder();
    }

    /**
     * A descriptor of Envoy's rate limit service, for Envoy's gateway: the request's domain and the
     * descriptor's entries as the bytes Envoy sent (any bytes: see {@link EnvoyDescriptors}). Only
     * policies with an envoy selector decide it, and one no policy selects has no limit. No
     * descriptor built by {@link #builder()} is one, whatever its fields say.
     *
     * @param keys   the entries' keys, in order
     * @param values the entries' values, one per key
     */
    public static Descriptor envoy(final byte[] domain, final List<byte[]> keys, final List<byte[]> values)
    {
        if (keys.size() != values.size())
        {
            throw new IllegalArgumentException(keys.size() + " keys and " + values.size() + " values: one value per key");
        }
        final String tenant = EnvoyDescriptors.bucketKey(values);
        final String route = EnvoyDescriptors.route(domain, keys, values);
        return new Descriptor(new String[] {tenant, "", "", route, "", ""}, AcquireCodec.encodeEnvoyFields(tenant, route));
    }

    /** Whether it is a descriptor of Envoy's rate limit service ({@link #envoy}). */
    public boolean envoy()
    {
        return AcquireCodec.isEnvoy(encoded);
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

    /**
     * Orders descriptors by their encoded fields; 0 exactly when they are equal. Hash tables keyed
     * by descriptors rely on it: a caller can choose fields whose hashes collide, and a table bin of
     * comparable keys is searched in logarithmic time, not one key after another.
     */
    @Override
    public int compareTo(final Descriptor other)
    {
        return this == other ? 0 : Arrays.compareUnsigned(encoded, other.encoded);
    }

    @Override
    public String toString()
    {
        return "Descriptor{" + (envoy() ? "envoy, " : "") + "tenant=" + tenant + ", principal=" + principal + ", method=" + method + ", route=" + route +
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
            bytes = utf8(raw);
        }
        catch (final CharacterCodingException e)
        {
            throw new InvalidDescriptorException(field, FieldProblem.INVALID_UTF8.describe(field, 0) +
                " (an unpaired surrogate in the string)");
        }
        final ByteBuf view = bytes.length == 0 ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(bytes);
        final int start = DescriptorRules.trimStart(view, 0, bytes.length);
        final int end = DescriptorRules.trimEnd(view, start, bytes.length);
        final FieldProblem problem = DescriptorRules.check(field, view, start, end - start);
        if (problem != FieldProblem.NONE)
        {
            throw new InvalidDescriptorException(field, problem.describe(field, end - start));
        }
        // bytes are raw's exact encoding, so with nothing trimmed the value is raw itself.
        final String value = start == 0 && end == bytes.length ? raw : new String(bytes, start, end - start, StandardCharsets.UTF_8);
        switch (field)
        {
            case METHOD:
                return value.toUpperCase(Locale.ROOT);
            case CLIENT_IP:
            case REGION:
                return value.toLowerCase(Locale.ROOT);
            case ROUTE:
                final int pathLength = DescriptorRules.routePathLength(view, start, end - start);
                if (isCanonicalPath(bytes, start, pathLength))
                {
                    return pathLength == end - start ? value : new String(bytes, start, pathLength, StandardCharsets.UTF_8);
                }
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

    private static final byte[] NO_BYTES = new byte[0];

    /** Whether a path (it starts with '/') has no empty segment to drop: no "//" and no trailing '/' but the root's. */
    private static boolean isCanonicalPath(final byte[] bytes, final int start, final int length)
    {
        for (int i = start + 1; i < start + length; i++)
        {
            if (bytes[i] == '/' && bytes[i - 1] == '/')
            {
                return false;
            }
        }
        return length == 1 || bytes[start + length - 1] != '/';
    }

    /**
     * UTF-8 of a field. Only a surrogate can make a Java string unencodable (one without its pair),
     * so a string with none takes the JDK's fast encoding, which is then exact; one with any goes
     * through the strict encoder, which refuses an unpaired one instead of writing '?'.
     */
    private static byte[] utf8(final String value) throws CharacterCodingException
    {
        if (value.isEmpty())
        {
            return NO_BYTES; // most descriptors leave most fields unset
        }
        for (int i = 0; i < value.length(); i++)
        {
            if (Character.isSurrogate(value.charAt(i)))
            {
                return encodeStrict(value);
            }
        }
        return value.getBytes(StandardCharsets.UTF_8);
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
