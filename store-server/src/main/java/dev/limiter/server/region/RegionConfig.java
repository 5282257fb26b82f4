package dev.limiter.server.region;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Which region a node belongs to and how it reaches the others (docs/regions.md): its region's
 * name, the admin addresses of the other regions' nodes (and optionally of its own region's other
 * nodes, whose demand it then adds to its own), the token the regions' exchange requires, and the
 * slot and guard of {@link ShareAllocator}. Immutable.
 *
 * @param region      this node's region
 * @param peers       admin addresses ({@code host:port}) by region, this region's own allowed
 * @param token       bearer token of the exchange (the same in every region; not the admin token)
 * @param slotMillis  one region's slot, ms (default 250: a region may raise its share every regions x 250 ms)
 * @param guardMillis margin at both ends of a slot, ms (default 50: wall clocks must agree within it)
 */
public record RegionConfig(String region, Map<String, List<String>> peers, String token, long slotMillis, long guardMillis)
{
    /** Default slot: sub-second exchange, as the source requirements ask. */
    public static final long DEFAULT_SLOT_MILLIS = 250;
    public static final long DEFAULT_GUARD_MILLIS = 50;
    private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9-]{0,31}");
    private static final Pattern TOKEN = Pattern.compile("[A-Za-z0-9._~+/=-]{16,256}");

    /**
     * @throws IllegalArgumentException saying what is wrong and what to write instead: a region's name, a token
     *                                  when there are other regions, a slot and guard out of range
     */
    public RegionConfig
    {
        if (region == null || !NAME.matcher(region).matches())
        {
            throw new IllegalArgumentException("--region: a name of 1 to 32 lowercase letters, digits and '-', was '" +
                region + "'");
        }
        peers = Map.copyOf(peers);
        for (final String name : peers.keySet())
        {
            if (!NAME.matcher(name).matches())
            {
                throw new IllegalArgumentException("--region-peers: 'REGION=HOST:PORT[,HOST:PORT...]' per region, " +
                    "regions separated by ';' (each named once), was '" + name + "'");
            }
        }
        final boolean others = peers.keySet().stream().anyMatch(r -> !r.equals(region));
        if (others && (token == null || !TOKEN.matcher(token).matches()))
        {
            throw new IllegalArgumentException("the region exchange needs a token of 16 to 256 characters " +
                "[A-Za-z0-9._~+/=-], the same in every region (--region-token or $LIMITER_REGION_TOKEN; " +
                "not the admin token)");
        }
        if (slotMillis < 20 || slotMillis > 60_000 || guardMillis < 1 || guardMillis * 2 >= slotMillis)
        {
            throw new IllegalArgumentException("--region-slot-ms: 20 to 60000 and more than twice the guard (" +
                guardMillis + " ms), was " + slotMillis);
        }
    }

    /** The guard for a slot: {@value #DEFAULT_GUARD_MILLIS} ms, or a fifth of a shorter slot. */
    public static long guardFor(final long slotMillis)
    {
        return Math.min(DEFAULT_GUARD_MILLIS, slotMillis / 5);
    }

    /**
     * Parses {@code --region} and {@code --region-peers} ({@code us=host:port,host:port;eu=host:port}).
     *
     * @throws IllegalArgumentException saying what is wrong and what to write instead
     */
    public static RegionConfig parse(final String region, final String peers, final String token, final long slotMillis,
        final long guardMillis)
    {
        final Map<String, List<String>> byRegion = new LinkedHashMap<>();
        if (peers != null && !peers.isBlank())
        {
            for (final String part : peers.split(";"))
            {
                final int eq = part.indexOf('=');
                final String name = eq < 0 ? "" : part.substring(0, eq).strip();
                if (eq < 0 || !NAME.matcher(name).matches() || byRegion.containsKey(name))
                {
                    throw new IllegalArgumentException("--region-peers: 'REGION=HOST:PORT[,HOST:PORT...]' per region, regions " +
                        "separated by ';' (each named once), was '" + part + "'");
                }
                final List<String> addresses = new ArrayList<>();
                for (final String address : part.substring(eq + 1).split(","))
                {
                    final String a = address.strip();
                    final int colon = a.lastIndexOf(':');
                    if (colon < 1 || !a.substring(colon + 1).matches("\\d{1,5}") || Integer.parseInt(a.substring(colon + 1)) > 65535)
                    {
                        throw new IllegalArgumentException("--region-peers: '" + a + "' in region " + name + " is not HOST:PORT (an admin port)");
                    }
                    addresses.add(a);
                }
                byRegion.put(name, List.copyOf(addresses));
            }
        }
        return new RegionConfig(region, byRegion, token, slotMillis, guardMillis);
    }

    /** Every region's name, this one's included, sorted. */
    public List<String> regions()
    {
        final List<String> all = new ArrayList<>(peers.keySet());
        if (!all.contains(region))
        {
            all.add(region);
        }
        return all.stream().sorted().toList();
    }
}
