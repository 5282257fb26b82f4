package dev.limiter.protocol;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/**
 * The version and git commit this build came from, as Maven wrote them into {@code build.properties}
 * when it built this module, and the protocol generation it speaks to its peers. What
 * {@code --version}, the {@code limiter_build_info} gauge and STATUS report.
 *
 * @param version the project version, e.g. {@code 0.1.0}, or {@code unknown}
 * @param commit  the abbreviated git commit, or {@code unknown} (built from a tree without .git)
 */
public record BuildInfo(String version, String commit)
{
    /** What a value Maven could not fill in reads as. */
    public static final String UNKNOWN = "unknown";

    private static final BuildInfo CURRENT = load();

    /** This build's. */
    public static BuildInfo current()
    {
        return CURRENT;
    }

    /** One line for {@code --version}: {@code limiter 0.1.0 (commit 1a2b3c4d5e6f, protocol generation 2)}. */
    public String describe()
    {
        return "limiter " + version + " (commit " + commit + ", protocol generation " + ProtocolGeneration.CURRENT +
            ")";
    }

    private static BuildInfo load()
    {
        final Properties properties = new Properties();
        try (InputStream in = BuildInfo.class.getResourceAsStream("build.properties"))
        {
            if (in != null)
            {
                properties.load(in);
            }
        }
        catch (final IOException e)
        {
            throw new UncheckedIOException("cannot read build.properties from the wire-protocol jar", e);
        }
        return new BuildInfo(filled(properties.getProperty("version")), filled(properties.getProperty("commit")));
    }

    /** A property Maven filled in, or {@link #UNKNOWN} for one it left as {@code ${...}} or blank. */
    static String filled(final String value)
    {
        return value == null || value.isBlank() || value.startsWith("${") ? UNKNOWN : value.trim();
    }
}
