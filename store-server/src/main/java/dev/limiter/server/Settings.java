package dev.limiter.server;

/** What the settings records share: one way to refuse a value. */
final class Settings
{
    private Settings()
    {
    }

    /**
     * @throws IllegalArgumentException with {@code message} (which names the setting, its value and what to change)
     *                                  unless {@code condition} holds
     */
    static void require(final boolean condition, final String message)
    {
        if (!condition)
        {
            throw new IllegalArgumentException(message);
        }
    }
}
