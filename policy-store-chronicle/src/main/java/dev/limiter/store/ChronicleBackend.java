package dev.limiter.store;

import net.openhft.chronicle.map.ChronicleMap;

import java.io.IOException;
import java.nio.file.Path;

/** The one Chronicle Map entry (loaded only after {@link ChroniclePolicyStore#open} has turned analytics off). */
final class ChronicleBackend
{
    private static final String KEY = "policy-set";

    private final ChronicleMap<String, byte[]> map;

    ChronicleBackend(final Path file, final int maxValueBytes) throws IOException
    {
        this.map = ChronicleMap.of(String.class, byte[].class)
            .name("limiter-policy-set")
            .entries(1)
            .averageKey(KEY)
            .averageValueSize(maxValueBytes)
            .createPersistedTo(file.toFile());
    }

    byte[] get()
    {
        return map.get(KEY);
    }

    void put(final byte[] value)
    {
        map.put(KEY, value);
    }

    void close()
    {
        map.close();
    }
}
