package dev.limiter.server.admin;

/** A request the admin API cannot act on: answered 400 with this message, nothing changed. */
final class BadRequest extends RuntimeException
{
    BadRequest(final String message)
    {
        super(message, null, false, false);
    }
}
