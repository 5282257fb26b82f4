package dev.limiter.store;

import dev.limiter.client.PolicyStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Keeps the SDK's last policy set in a Chronicle Map file, so a host service that restarts while
 * the cluster is unreachable still holds the policies (within the SDK's TTL). Opt-in, through
 * {@code LimiterClient.builder().policyStore(ChroniclePolicyStore.open(path))}.
 * <p>
 * Chronicle needs JVM flags and a full JDK at run time (see docs/control-plane.md). It reports
 * usage to its vendor unless told not to before its classes load: {@link #open} sets
 * {@code chronicle.analytics.disable} and {@code chronicle.announcer.disable} first, and nothing
 * in this class's signature names a Chronicle type, so loading it loads none.
 */
public final class ChroniclePolicyStore implements PolicyStore
{
    private static final Logger LOG = LoggerFactory.getLogger(ChroniclePolicyStore.class);

    /** Room per set unless told otherwise (a set of a few thousand policies). */
    public static final int DEFAULT_MAX_SET_BYTES = 256 * 1024;

    private final ChronicleBackend backend;

    private ChroniclePolicyStore(final ChronicleBackend backend)
    {
        this.backend = backend;
    }

    /** Opens (or creates) the store file, sized for sets of up to {@value #DEFAULT_MAX_SET_BYTES} bytes. */
    public static ChroniclePolicyStore open(final Path file) throws IOException
    {
        return open(file, DEFAULT_MAX_SET_BYTES);
    }

    /**
     * Opens (or creates) the store file.
     *
     * @param maxSetBytes the largest encoded policy set expected (a larger one is not stored, and says so)
     * @throws IOException when the file cannot be created or is not a store of this kind
     */
    public static ChroniclePolicyStore open(final Path file, final int maxSetBytes) throws IOException
    {
        if (maxSetBytes < 1024)
        {
            throw new IllegalArgumentException("maxSetBytes must be at least 1024, was " + maxSetBytes);
        }
        // The product never phones home: off before the first Chronicle class loads.
        System.setProperty("chronicle.analytics.disable", "true");
        System.setProperty("chronicle.announcer.disable", "true");
        final Path parent = file.toAbsolutePath().getParent();
        if (parent != null)
        {
            Files.createDirectories(parent);
        }
        return new ChroniclePolicyStore(new ChronicleBackend(file, maxSetBytes + 16));
    }

    @Override
    public Optional<Stored> load()
    {
        try
        {
            final byte[] value = backend.get();
            if (value == null || value.length < 16)
            {
                return Optional.empty();
            }
            final ByteBuffer in = ByteBuffer.wrap(value);
            final long version = in.getLong();
            final long confirmedAt = in.getLong();
            final byte[] set = new byte[in.remaining()];
            in.get(set);
            return Optional.of(new Stored(version, confirmedAt, set));
        }
        catch (final RuntimeException e)
        {
            LOG.warn("cannot read the stored policy set: {}", e.toString());
            return Optional.empty();
        }
    }

    @Override
    public void save(final Stored stored)
    {
        final byte[] value = ByteBuffer.allocate(16 + stored.policySet().length)
            .putLong(stored.version()).putLong(stored.confirmedAtMillis()).put(stored.policySet()).array();
        try
        {
            backend.put(value);
        }
        catch (final RuntimeException e)
        {
            LOG.warn("cannot store policy set version {} ({} bytes): {}", stored.version(), value.length, e.toString());
        }
    }

    @Override
    public void close()
    {
        backend.close();
    }
}
