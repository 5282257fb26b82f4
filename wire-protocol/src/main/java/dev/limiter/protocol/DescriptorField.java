package dev.limiter.protocol;

/**
 * The fields of a request descriptor, in wire order, with their limits (in UTF-8 bytes, after
 * trimming surrounding whitespace).
 */
public enum DescriptorField
{
    TENANT("tenant", 64, true),
    PRINCIPAL("principal", 128, false),
    METHOD("method", 16, false),
    /** Raw length on the wire may be up to {@link #MAX_RAW_ROUTE_BYTES}; the path part at most this. */
    ROUTE("route", 512, true),
    CLIENT_IP("clientIp", 45, false),
    REGION("region", 32, false);

    /** Largest route on the wire, query string included (it is stripped before matching). */
    public static final int MAX_RAW_ROUTE_BYTES = 2048;

    private static final DescriptorField[] VALUES = values();

    private final String jsonName;
    private final int maxBytes;
    private final boolean required;

    DescriptorField(final String jsonName, final int maxBytes, final boolean required)
    {
        this.jsonName = jsonName;
        this.maxBytes = maxBytes;
        this.required = required;
    }

    /** The field's name as users see it in errors, JSON and the CLI. */
    public String jsonName()
    {
        return jsonName;
    }

    /** Largest accepted value in UTF-8 bytes, after trimming. */
    public int maxBytes()
    {
        return maxBytes;
    }

    public boolean required()
    {
        return required;
    }

    /** Largest length the wire format lets this field carry. */
    public int maxWireBytes()
    {
        return this == ROUTE ? MAX_RAW_ROUTE_BYTES : 255;
    }

    /**
     * The field at this wire index (its ordinal). Public, not package-private, because the shaded
     * SDK (limiter-client) relocates the protocol's other classes into another package and keeps
     * this enum's name, as it is on the SDK's public API.
     */
    public static DescriptorField at(final int index)
    {
        return VALUES[index];
    }
}
