package dev.limiter.server.testing;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * A fixture registered on a test's instance field ({@code @RegisterExtension final LocalCluster cluster = new
 * LocalCluster();}): JUnit makes a new one for each test, gives it a fresh temporary directory before the test,
 * and after it closes the fixture (stopping what it started) and deletes the directory.
 */
public abstract class PerTestDirectory implements BeforeEachCallback, AfterEachCallback, AutoCloseable
{
    private Path dir;

    /** This test's directory (valid from before the test until after it). */
    public final Path dir()
    {
        if (dir == null)
        {
            throw new IllegalStateException("register the fixture with @RegisterExtension on an instance field");
        }
        return dir;
    }

    @Override
    public final void beforeEach(final ExtensionContext context) throws IOException
    {
        dir = Files.createTempDirectory(getClass().getSimpleName());
    }

    @Override
    public final void afterEach(final ExtensionContext context) throws Exception
    {
        try
        {
            close();
        }
        finally
        {
            delete(dir);
        }
    }

    @Override
    public abstract void close();

    private static void delete(final Path dir) throws IOException
    {
        try (Stream<Path> paths = Files.walk(dir))
        {
            paths.sorted(Comparator.reverseOrder()).forEach(path ->
            {
                try
                {
                    Files.deleteIfExists(path);
                }
                catch (final IOException e)
                {
                    throw new UncheckedIOException(e);
                }
            });
        }
    }
}
