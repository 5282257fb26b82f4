package dev.limiter.cli;

import dev.limiter.protocol.BuildInfo;

/** {@code ./limiter --version}: the build's version, git commit and protocol generation, one line. */
public final class VersionCommand
{
    private VersionCommand()
    {
    }

    public static void main(final String[] args)
    {
        System.out.println(BuildInfo.current().describe());
    }
}
