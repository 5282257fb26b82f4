package dev.limiter.server.engine;

import dev.limiter.protocol.DecisionIds;
import dev.limiter.protocol.ReasonCode;
import io.netty.buffer.ByteBuf;

import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.LongSupplier;

/**
 * This node's sampled log of rejected decisions: a fixed ring of {@value #DEFAULT_CAPACITY} slots
 * written by the threads that complete frames, without a lock and without allocating (the slots'
 * fields are preallocated columns; tenants and paths are copied into fixed byte ranges, cut at
 * {@value #MAX_TENANT_BYTES} and {@value #MAX_ROUTE_BYTES} bytes). An allowed decision never reaches
 * it. Rejections are all kept up to {@link #ALL_PER_SECOND} a second, then one in
 * {@link #ONE_IN} (the others counted as {@link #dropped()}); the newest overwrite the oldest.
 * <p>
 * Each slot has a sequence: a writer claims a slot by moving it from even to odd (a CAS, so two
 * writers never share one: the later one drops its sample) and publishes it even again; a reader
 * keeps what it read only when the sequence is the same even number before and after.
 */
public final class RejectedDecisions
{
    /** Slots of the ring (a power of two). */
    public static final int DEFAULT_CAPACITY = 4096;
    /** Rejections sampled every second before sampling thins them. */
    public static final int ALL_PER_SECOND = 1000;
    /** Beyond {@link #ALL_PER_SECOND} in a second, one rejection in this many is sampled. */
    public static final int ONE_IN = 64;
    static final int MAX_TENANT_BYTES = 64;
    static final int MAX_ROUTE_BYTES = 256;

    /** One sampled rejection, as the admin API shows it. */
    public record Sample(String id, long atMillis, String policy, long version, String tenant, String route,
        String reason)
    {
    }

    private final int mask;
    private final LongSupplier wallMillis;
    private final AtomicLong claims = new AtomicLong();
    private final AtomicLongArray sequence;
    private final long[] idBase;
    private final int[] entry;
    private final long[] atMillis;
    private final String[] policy;
    private final long[] version;
    private final int[] reason;
    private final byte[] tenant;
    private final int[] tenantLength;
    /** The policy's route template when it has one (no copy), else null and the path's bytes. */
    private final String[] template;
    private final byte[] route;
    private final int[] routeLength;
    private final AtomicLong sampled = new AtomicLong();
    private final AtomicLong dropped = new AtomicLong();
    private volatile long second;
    private final AtomicLong inSecond = new AtomicLong();

    /** A log of {@value #DEFAULT_CAPACITY} slots stamped with the system clock. */
    public RejectedDecisions()
    {
        this(DEFAULT_CAPACITY, System::currentTimeMillis);
    }

    /**
     * @param capacity   slots, a power of two
     * @param wallMillis the time each sample is stamped with (ms since the epoch)
     */
    public RejectedDecisions(final int capacity, final LongSupplier wallMillis)
    {
        if (capacity < 1 || Integer.bitCount(capacity) != 1)
        {
            throw new IllegalArgumentException("capacity must be a power of two, was " + capacity);
        }
        this.mask = capacity - 1;
        this.wallMillis = wallMillis;
        sequence = new AtomicLongArray(capacity);
        idBase = new long[capacity];
        entry = new int[capacity];
        atMillis = new long[capacity];
        policy = new String[capacity];
        version = new long[capacity];
        reason = new int[capacity];
        tenant = new byte[capacity * MAX_TENANT_BYTES];
        tenantLength = new int[capacity];
        template = new String[capacity];
        route = new byte[capacity * MAX_ROUTE_BYTES];
        routeLength = new int[capacity];
    }

    /** The time a frame's rejections are stamped with (read once per frame that has any). */
    long now()
    {
        return wallMillis.getAsLong();
    }

    /**
     * Samples one rejected decision, or counts it as dropped. Any thread; allocates nothing.
     *
     * @param routeTemplate the deciding policy's route template, or null: then the path's bytes are kept
     */
    void record(final long base, final int index, final long nowMillis, final String policyId, final long policyVersion,
        final int reasonCode, final ByteBuf request, final int tenantAt, final int tenantBytes,
        final String routeTemplate, final int pathAt, final int pathBytes)
    {
        if (!admit(nowMillis))
        {
            dropped.incrementAndGet();
            return;
        }
        final int slot = (int)(claims.getAndIncrement() & mask);
        final long before = sequence.get(slot);
        if ((before & 1) != 0 || !sequence.compareAndSet(slot, before, before + 1))
        {
            dropped.incrementAndGet(); // another writer holds this slot (the ring went round while it wrote)
            return;
        }
        idBase[slot] = base;
        entry[slot] = index;
        atMillis[slot] = nowMillis;
        policy[slot] = policyId;
        version[slot] = policyVersion;
        reason[slot] = reasonCode;
        final int tenantCopied = Math.min(tenantBytes, MAX_TENANT_BYTES);
        if (request != null && tenantCopied > 0)
        {
            request.getBytes(tenantAt, tenant, slot * MAX_TENANT_BYTES, tenantCopied);
        }
        tenantLength[slot] = request == null ? 0 : tenantCopied;
        template[slot] = routeTemplate;
        final int pathCopied = routeTemplate != null || request == null ? 0 : Math.min(pathBytes, MAX_ROUTE_BYTES);
        if (pathCopied > 0)
        {
            request.getBytes(pathAt, route, slot * MAX_ROUTE_BYTES, pathCopied);
        }
        routeLength[slot] = pathCopied;
        sequence.set(slot, before + 2);
        sampled.incrementAndGet();
    }

    /**
     * All rejections up to {@link #ALL_PER_SECOND} in a second, then one in {@link #ONE_IN} (approximate across
     * threads).
     */
    private boolean admit(final long nowMillis)
    {
        final long s = nowMillis / 1000;
        if (s != second)
        {
            second = s;
            inSecond.set(0);
        }
        final long n = inSecond.incrementAndGet();
        return n <= ALL_PER_SECOND || n % ONE_IN == 0;
    }

    /** Rejections sampled since the node started. */
    public long sampled()
    {
        return sampled.get();
    }

    /** Rejections not sampled since the node started (thinned out, or their slot was busy). */
    public long dropped()
    {
        return dropped.get();
    }

    /**
     * The newest samples first, at most {@code limit}, of {@code policyId} and {@code tenantName} when
     * given (null: any). Any thread; allocates (admin reads only).
     */
    public List<Sample> newest(final int limit, final String policyId, final String tenantName)
    {
        final List<Sample> found = new ArrayList<>();
        final long newest = claims.get();
        final long oldest = Math.max(0, newest - (mask + 1));
        for (long claim = newest - 1; claim >= oldest && found.size() < limit; claim--)
        {
            final Sample sample = read((int)(claim & mask));
            if (sample != null && (policyId == null || policyId.equals(sample.policy()))
                && (tenantName == null || tenantName.equals(sample.tenant())))
            {
                found.add(sample);
            }
        }
        return found;
    }

    /** The sample of decision {@code id} (printed form), or null when this node holds none. */
    public Sample find(final String id)
    {
        final long base = DecisionIds.parseBase(id);
        final int index = DecisionIds.parseEntry(id);
        for (int slot = 0; slot <= mask; slot++)
        {
            if (idBase[slot] == base && entry[slot] == index)
            {
                final Sample sample = read(slot);
                if (sample != null && sample.id().equals(DecisionIds.format(base, index)))
                {
                    return sample;
                }
            }
        }
        return null;
    }

    /** The slot's sample, or null when it is empty or being written. */
    private Sample read(final int slot)
    {
        final long before = sequence.get(slot);
        if (before == 0 || (before & 1) != 0)
        {
            return null;
        }
        final long base = idBase[slot];
        final int index = entry[slot];
        final long at = atMillis[slot];
        final String policyId = policy[slot];
        final long policyVersion = version[slot];
        final int code = reason[slot];
        final String tenantName = new String(tenant, slot * MAX_TENANT_BYTES, tenantLength[slot],
            StandardCharsets.UTF_8);
        final String routeTemplate = template[slot];
        final String path = routeTemplate != null ? routeTemplate :
            new String(route, slot * MAX_ROUTE_BYTES, routeLength[slot], StandardCharsets.UTF_8);
        VarHandle.acquireFence();
        if (sequence.get(slot) != before)
        {
            return null; // overwritten while read
        }
        return new Sample(DecisionIds.format(base, index), at, policyId, policyVersion, tenantName, path,
            ReasonCode.known(code) ? ReasonCode.of(code).name() : "CODE_" + code);
    }
}
