package dev.limiter.bench.cyclefixture.a;

import dev.limiter.bench.cyclefixture.b.Right;

/** A package cycle made on purpose: {@code ArchitectureTest} must find it. Never used. */
public final class Left
{
    private Left()
    {
    }

    static Right other()
    {
        return null;
    }
}
