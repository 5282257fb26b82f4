package dev.limiter.protocol;

/**
 * What to do about the protobuf JSON parser's most common complaints on policy files and bodies:
 * its messages say what failed ({@code Failed to parse duration: "2h"}), not how it is written.
 */
public final class JsonHints
{
    private JsonHints()
    {
    }

    /** {@code message} with a hint appended when the failure is one of the known mistakes; unchanged otherwise. */
    public static String explain(final String message)
    {
        if (message == null)
        {
            return null;
        }
        if (message.contains("Failed to parse duration"))
        {
            return message + " (a duration is seconds with an 's': \"60s\", \"0.5s\", \"7200s\" for 2 hours)";
        }
        if (message.contains("Failed to parse timestamp"))
        {
            return message + " (a time is RFC 3339 in UTC or with an offset: \"2026-12-07T09:00:00Z\")";
        }
        return message;
    }
}
