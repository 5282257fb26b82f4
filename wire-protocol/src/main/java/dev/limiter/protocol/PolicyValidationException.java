package dev.limiter.protocol;

import java.util.List;

/** A policy set was rejected; {@link #errors()} lists every field-level problem found. */
public final class PolicyValidationException extends IllegalArgumentException
{
    private static final long serialVersionUID = 1L;

    private final List<String> errors;

    public PolicyValidationException(final List<String> errors)
    {
        super(errors.size() == 1 ? errors.get(0) : errors.size() + " problems: " + String.join("; ", errors));
        this.errors = List.copyOf(errors);
    }

    /** Each entry names the field (e.g. {@code policies[2].rate}) and what is wrong with it. */
    public List<String> errors()
    {
        return errors;
    }
}
