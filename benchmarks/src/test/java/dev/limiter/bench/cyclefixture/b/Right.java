package dev.limiter.bench.cyclefixture.b;

import dev.limiter.bench.cyclefixture.a.Left;

/** The other half of the cycle made on purpose in {@code cyclefixture}. Never used. */
public final class Right
{
    private Right()
    {
    }

    static Left other()
    {
        return null;
    }
}
