package dev.limiter.server.control;

import dev.limiter.protocol.CompiledPolicy;
import dev.limiter.protocol.DescriptorView;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The exemptions in force, compiled for the request path: immutable, replaced as a whole on every
 * change. A request is covered by the first exemption whose selector matches it and whose expiry
 * (wall-clock millis) has not passed; the check allocates nothing.
 */
public final class ActiveExemptions
{
    static final ActiveExemptions NONE = new ActiveExemptions(new String[0], new CompiledPolicy[0], new long[0], new AtomicLong[0]);

    private final String[] ids;
    private final CompiledPolicy[] selectors;
    private final long[] expiresAtMillis;
    private final AtomicLong[] bypassed;

    ActiveExemptions(final String[] ids, final CompiledPolicy[] selectors, final long[] expiresAtMillis, final AtomicLong[] bypassed)
    {
        this.ids = ids;
        this.selectors = selectors;
        this.expiresAtMillis = expiresAtMillis;
        this.bypassed = bypassed;
    }

    public boolean isEmpty()
    {
        return ids.length == 0;
    }

    /**
     * Counts and answers whether an exemption covers the request at {@code nowMillis}. An
     * exemption stops covering at its expiry on the node that decides, before the cluster's tick
     * removes it.
     */
    public boolean bypass(final DescriptorView request, final long nowMillis)
    {
        for (int i = 0; i < selectors.length; i++)
        {
            if (nowMillis < expiresAtMillis[i] && selectors[i].matches(request))
            {
                bypassed[i].incrementAndGet();
                return true;
            }
        }
        return false;
    }
}
