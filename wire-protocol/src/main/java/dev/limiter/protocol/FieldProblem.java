package dev.limiter.protocol;

/** What is wrong with one descriptor field; {@link #NONE} when nothing is. */
public enum FieldProblem
{
    NONE("ok"),
    MISSING("is required and was empty"),
    TOO_LONG("is too long"),
    INVALID_UTF8("is not valid UTF-8"),
    CONTROL_CHARACTER("contains a control character"),
    INVALID_CHARACTER("contains a character this field does not allow"),
    NOT_ABSOLUTE("must start with '/'"),
    DOT_SEGMENT("must not contain '.' or '..' segments"),
    NOT_AN_IP("is not an IPv4 or IPv6 address (e.g. 203.0.113.7 or 2001:db8::1)");

    private final String text;

    FieldProblem(final String text)
    {
        this.text = text;
    }

    /** Human-readable description, e.g. "is too long". */
    public String text()
    {
        return text;
    }

    /** A one-line error message for this problem in {@code field}, saying what is allowed. */
    public String describe(final DescriptorField field, final int length)
    {
        final StringBuilder sb = new StringBuilder(96).append(field.jsonName()).append(' ').append(text);
        switch (this)
        {
            case TOO_LONG:
                sb.append(" (").append(length).append(" bytes; at most ").append(field.maxBytes()).append(')');
                break;
            case INVALID_CHARACTER:
                sb.append(" (allowed: ").append(DescriptorRules.allowedCharacters(field)).append(')');
                break;
            default:
                break;
        }
        return sb.toString();
    }
}
