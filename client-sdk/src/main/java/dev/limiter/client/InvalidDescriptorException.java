package dev.limiter.client;

import dev.limiter.protocol.DescriptorField;

/** A descriptor field is invalid; the message names the field, the problem and what is allowed. */
public final class InvalidDescriptorException extends IllegalArgumentException
{
    private static final long serialVersionUID = 1L;

    private final transient DescriptorField field;

    InvalidDescriptorException(final DescriptorField field, final String message)
    {
        super(message);
        this.field = field;
    }

    public DescriptorField field()
    {
        return field;
    }
}
