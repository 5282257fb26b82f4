package dev.limiter.server.engine;

import dev.limiter.server.table.KeyHash;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The per-shard shadow comparison table, driven with a hand-moved wall clock. */
class ShadowCompareTableTest
{
    private static final long T0 = 1_800_000_000_000L - 1_800_000_000_000L % ShadowCompareTable.WINDOW_MILLIS;
    private static final int ORDERS = 3;

    private final ShadowCompareTable table = new ShadowCompareTable();
    private final UnsafeBuffer key = new UnsafeBuffer(new byte[1024]);

    /** Records one evaluation of tenant and route under shadow v2 against enforced v1. */
    private void record(final String tenant, final String route, final boolean enforcedAllowed,
        final boolean wouldAllow, final long now)
    {
        record(2, 1, tenant, route, enforcedAllowed, wouldAllow, now);
    }

    private void record(final long shadowVersion, final long enforcedVersion, final String tenant, final String route,
        final boolean enforcedAllowed, final boolean wouldAllow, final long now)
    {
        final byte[] t = tenant.getBytes(StandardCharsets.UTF_8);
        final byte[] r = route.getBytes(StandardCharsets.UTF_8);
        key.putByte(0, (byte)t.length);
        key.putBytes(1, t);
        key.putBytes(1 + t.length, r);
        final int length = 1 + t.length + r.length;
        table.record(ORDERS, shadowVersion, enforcedVersion, key, 0, length, KeyHash.hash(key, 0, length),
            enforcedAllowed, wouldAllow, now);
    }

    private ShadowComparisons.Comparison compare(final long since, final long now)
    {
        table.publishIfChanged(now);
        return ShadowComparisons.merge(List.of(table.snapshot()), "orders", ORDERS, 2, 1, since);
    }

    private static ShadowComparisons.Row row(final ShadowComparisons.Comparison c, final String tenant)
    {
        return c.rows().stream().filter(r -> r.tenant().equals(tenant)).findFirst().orElseThrow(() ->
            new AssertionError("no row for " + tenant + " in " + c.rows()));
    }

    @Test
    void countsEachOutcomePerTenantAndRouteAndSortsByImpact()
    {
        record("acme", "/v1/orders/{id}", true, false, T0);      // newly rejected
        record("acme", "/v1/orders/{id}", true, false, T0 + 1);  // newly rejected
        record("acme", "/v1/orders/{id}", false, false, T0 + 2); // rejected by both
        record("globex", "/v1/orders/{id}", false, true, T0 + 3); // newly freed
        record("initech", "/v1/orders/{id}", true, true, T0 + 4);
        final ShadowComparisons.Comparison c = compare(0, T0 + 5);
        assertEquals(List.of("acme", "globex", "initech"),
            c.rows().stream().map(ShadowComparisons.Row::tenant).toList());
        final ShadowComparisons.Row acme = row(c, "acme");
        assertEquals("/v1/orders/{id}", acme.route());
        assertEquals(3, acme.decisions());
        assertEquals(1, acme.enforcedRejections());
        assertEquals(3, acme.predictedRejections());
        assertEquals(2, acme.newlyRejected());
        assertEquals(0, acme.newlyFreed());
        assertEquals(1, row(c, "globex").newlyFreed());
        assertEquals(0, c.untracked());
        assertEquals(2, c.shadowVersion());
        assertEquals(1, c.enforcedVersion());
        assertEquals(T0, c.sinceMillis());
        assertTrue(c.toJson().contains("{\"tenant\":\"acme\",\"route\":\"/v1/orders/{id}\",\"decisions\":3," +
            "\"enforcedRejections\":1,\"predictedRejections\":3,\"newlyRejected\":2,\"newlyFreed\":0}"), c.toJson());
        assertTrue(c.toJson().contains("\"tracked\":3,\"untracked\":0}"), c.toJson());
    }

    @Test
    void keepsTheHeavyHittersAndCountsWhatDidNotFitAsUntracked()
    {
        long now = T0;
        for (int i = 0; i < 50; i++)
        {
            record("heavy-a", "/v1/orders", true, false, now++);
            record("heavy-b", "/v1/orders", false, true, now++);
        }
        final int light = 3 * ShadowCompareTable.SLOTS;
        for (int i = 0; i < light; i++)
        {
            record("light-" + i, "/v1/orders", true, true, now++);
        }
        record("heavy-a", "/v1/orders", true, false, now++);
        final ShadowComparisons.Comparison c = compare(0, now);
        assertEquals(51, row(c, "heavy-a").newlyRejected(), "a heavy key keeps its slot and its exact count");
        assertEquals(50, row(c, "heavy-b").newlyFreed());
        assertEquals(ShadowCompareTable.SLOTS, c.rows().size());
        final long counted = c.rows().stream().mapToLong(ShadowComparisons.Row::decisions).sum();
        assertEquals(101 + light, counted + c.untracked(), "rows and untracked add up to every decision");
        assertTrue(c.untracked() >= light - ShadowCompareTable.SLOTS, "the light keys that were pushed out: "
            + c.untracked());
    }

    @Test
    void aNewShadowVersionStartsOverAndAnOlderOneIsDropped()
    {
        record(1, 1, "acme", "/v1/orders", true, false, T0);
        record(1, 1, "acme", "/v1/orders", true, false, T0 + 1);
        record(2, 1, "acme", "/v1/orders", true, true, T0 + 2_000);
        record(1, 1, "acme", "/v1/orders", true, false, T0 + 2_001); // routed before the change: not counted
        final ShadowComparisons.Comparison c = compare(0, T0 + 3_000);
        assertEquals(1, c.rows().size());
        assertEquals(1, row(c, "acme").decisions(), "version 1's counts are gone");
        assertEquals(0, row(c, "acme").newlyRejected());
        assertEquals(T0 + 2_000, c.sinceMillis(), "counted since version 2 was first evaluated");
        final ShadowComparisons.Comparison old = ShadowComparisons.merge(List.of(table.snapshot()), "orders", ORDERS,
            1, 1, 0);
        assertTrue(old.rows().isEmpty(), "nothing is served for a version no longer counted");
    }

    @Test
    void windowsRotateAndSinceSelectsTheWindowsThatOverlapIt()
    {
        final long w = ShadowCompareTable.WINDOW_MILLIS;
        record("acme", "/v1/orders", true, false, T0);
        record("acme", "/v1/orders", true, false, T0 + w);
        record("acme", "/v1/orders", true, false, T0 + 2 * w + 10);
        final long now = T0 + 2 * w + 20;
        assertEquals(3, row(compare(0, now), "acme").newlyRejected());
        final ShadowComparisons.Comparison recent = compare(T0 + w + 1, now);
        assertEquals(2, row(recent, "acme").newlyRejected(), "the window holding 'since' and the later one");
        assertEquals(T0 + w, recent.sinceMillis(), "served at the windows' resolution, from the start of the first");
        // A full ring later every window has been reused: the old counts are gone.
        final long later = T0 + (ShadowCompareTable.WINDOWS + 2) * w + 5;
        record("globex", "/v1/orders", false, true, later);
        final ShadowComparisons.Comparison c = compare(0, later);
        assertEquals(List.of("globex"), c.rows().stream().map(ShadowComparisons.Row::tenant).toList());
    }

    @Test
    void aKeyLongerThanTheTableKeepsIsShownCutShort()
    {
        final String route = "/v1/" + "x".repeat(300);
        record("acme", route, true, false, T0);
        record("acme", route, true, false, T0 + 1);
        final ShadowComparisons.Row acme = row(compare(0, T0 + 2), "acme");
        assertEquals(2, acme.decisions(), "one key, matched by its whole length and hash");
        assertTrue(acme.route().endsWith("..."), acme.route());
        assertTrue(acme.route().length() < route.length(), acme.route());
    }
}
