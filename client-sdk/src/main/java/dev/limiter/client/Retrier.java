package dev.limiter.client;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.DoubleSupplier;

/**
 * Retries a call to a rate-limited service the way the service asks to be treated:
 * <ul>
 *   <li>a non-idempotent operation is tried once, never again (a retry could do it twice);</li>
 *   <li>a 429 is retried only when it says when ({@code Retry-After}), that wait is within
 *       {@link Builder#maxRetryAfter}, and attempts are left; the wait is honoured, never shortened,
 *       with up to 10% added at random so callers do not return in step;</li>
 *   <li>a 429 without {@code Retry-After} is not retried: a blind retry only adds load to a
 *       service that is already refusing it;</li>
 *   <li>other retryable failures (connection errors, 502/503/504) back off exponentially with full
 *       jitter: a random wait between 0 and {@code min(maxDelay, baseDelay x 2^attempt)}.</li>
 * </ul>
 * Immutable and thread-safe.
 */
public final class Retrier
{
    /** What one attempt came to. */
    public static final class Result<T>
    {
        private final T value;
        private final boolean retryable;
        private final boolean rateLimited;
        private final Duration retryAfter;
        private final String failure;

        private Result(final T value, final boolean retryable, final boolean rateLimited, final Duration retryAfter, final String failure)
        {
            this.value = value;
            this.retryable = retryable;
            this.rateLimited = rateLimited;
            this.retryAfter = retryAfter;
            this.failure = failure;
        }

        /** The call succeeded (or failed for good in a way the caller wants returned as a value). */
        public static <T> Result<T> done(final T value)
        {
            return new Result<>(value, false, false, null, null);
        }

        /** A 429; {@code retryAfter} null when the response had no Retry-After. */
        public static <T> Result<T> rateLimited(final T value, final Duration retryAfter)
        {
            return new Result<>(value, retryAfter != null, true, retryAfter, "429 Too Many Requests");
        }

        /** A failure worth another attempt after a backoff (connection error, 502, 503, 504). */
        public static <T> Result<T> retryable(final T value, final String failure)
        {
            return new Result<>(value, true, false, null, failure);
        }

        public T value()
        {
            return value;
        }
    }

    /** One attempt of the call; {@code attempt} counts from 1. */
    @FunctionalInterface
    public interface Attempt<T>
    {
        Result<T> run(int attempt) throws Exception;
    }

    /** How waiting is done (tests pass one that records instead of sleeping). */
    @FunctionalInterface
    public interface Sleeper
    {
        void sleep(Duration duration) throws InterruptedException;
    }

    private final int maxAttempts;
    private final Duration baseDelay;
    private final Duration maxDelay;
    private final Duration maxRetryAfter;
    private final Sleeper sleeper;
    private final DoubleSupplier random;

    private Retrier(final Builder builder)
    {
        this.maxAttempts = builder.maxAttempts;
        this.baseDelay = builder.baseDelay;
        this.maxDelay = builder.maxDelay;
        this.maxRetryAfter = builder.maxRetryAfter;
        this.sleeper = builder.sleeper;
        this.random = builder.random;
    }

    public static Builder builder()
    {
        return new Builder();
    }

    /**
     * Runs the call, retrying as the class describes.
     *
     * @param idempotent whether doing the operation twice is harmless (GET, PUT of the same value);
     *                   when false it is attempted exactly once
     * @return the last attempt's value (a 429 or a failure when no retry was allowed or left)
     */
    public <T> T run(final boolean idempotent, final Attempt<T> call) throws Exception
    {
        Objects.requireNonNull(call, "call");
        int attempt = 1;
        while (true)
        {
            final Result<T> result = call.run(attempt);
            if (!result.retryable || !idempotent || attempt >= maxAttempts)
            {
                return result.value;
            }
            final Duration wait;
            if (result.rateLimited)
            {
                if (result.retryAfter.compareTo(maxRetryAfter) > 0)
                {
                    return result.value; // longer than the caller is willing to wait: let it decide
                }
                final long extra = (long)(result.retryAfter.toNanos() * 0.1 * random.getAsDouble());
                wait = result.retryAfter.plusNanos(extra);
            }
            else
            {
                final long cap = Math.min(maxDelay.toNanos(), baseDelay.toNanos() << Math.min(30, attempt - 1));
                wait = Duration.ofNanos((long)(cap * random.getAsDouble()));
            }
            sleeper.sleep(wait);
            attempt++;
        }
    }

    public static final class Builder
    {
        private int maxAttempts = 3;
        private Duration baseDelay = Duration.ofMillis(50);
        private Duration maxDelay = Duration.ofSeconds(2);
        private Duration maxRetryAfter = Duration.ofSeconds(5);
        private Sleeper sleeper = duration -> Thread.sleep(duration.toMillis(), (int)(duration.toNanos() % 1_000_000));
        private DoubleSupplier random = () -> ThreadLocalRandom.current().nextDouble();

        /** Attempts in all, the first included (default 3). */
        public Builder maxAttempts(final int attempts)
        {
            if (attempts < 1)
            {
                throw new IllegalArgumentException("maxAttempts must be at least 1, was " + attempts);
            }
            this.maxAttempts = attempts;
            return this;
        }

        /** Backoff: the first retry waits up to {@code base}, doubling each time up to {@code max}. */
        public Builder backoff(final Duration base, final Duration max)
        {
            if (base == null || max == null || base.isNegative() || base.isZero() || max.compareTo(base) < 0)
            {
                throw new IllegalArgumentException("backoff needs 0 < base <= max, was " + base + ", " + max);
            }
            this.baseDelay = base;
            this.maxDelay = max;
            return this;
        }

        /** The longest Retry-After worth waiting for (default 5 s); a longer one is returned to the caller. */
        public Builder maxRetryAfter(final Duration max)
        {
            if (max == null || max.isNegative())
            {
                throw new IllegalArgumentException("maxRetryAfter must be zero or more, was " + max);
            }
            this.maxRetryAfter = max;
            return this;
        }

        public Builder sleeper(final Sleeper sleeper)
        {
            this.sleeper = Objects.requireNonNull(sleeper, "sleeper");
            return this;
        }

        /** Source of uniform [0, 1) values for jitter (tests make it fixed). */
        public Builder random(final DoubleSupplier random)
        {
            this.random = Objects.requireNonNull(random, "random");
            return this;
        }

        public Retrier build()
        {
            return new Retrier(this);
        }
    }
}
