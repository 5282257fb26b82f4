package dev.limiter.server.testing;

import dev.limiter.server.table.BucketKeys;
import dev.limiter.server.table.KeyHash;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Random;

/**
 * Makes bucket keys whose {@link KeyHash} is a chosen value, as an outside caller can: every step of
 * the hash (xor, multiply by an odd constant, rotate, murmur3's finaliser) can be undone, so the
 * last eight bytes of a key are solved for from the hash wanted and the bytes before them, and a
 * caller draws the bytes before them until the solved eight are printable text its field accepts.
 * About 3,500 draws per key; each draw is one step of the hash.
 */
public final class KeyHashCollisions
{
    private static final long P1 = 0x9E3779B97F4A7C15L;
    private static final long P2 = 0xC2B2AE3D27D4EB4FL;
    private static final long M1 = 0xFF51AFD7ED558CCDL;
    private static final long M2 = 0xC4CEB9FE1A85EC53L;
    private static final long INV_P1 = inverse(P1);
    private static final long INV_P2 = inverse(P2);
    private static final long INV_M1 = inverse(M1);
    private static final long INV_M2 = inverse(M2);

    /**
     * Bytes a made value may hold: printable ASCII but for {@code %}, {@code |} and space (kept as they are by every
     * edge).
     */
    public static boolean plain(final int b)
    {
        return b > 0x20 && b < 0x7F && b != '%' && b != '|';
    }

    private final Random random;

    public KeyHashCollisions(final long seed)
    {
        this.random = new Random(seed);
    }

    /** The bucket key the engine writes for a TENANT-scoped policy: prefix, then the tenant's bytes. */
    public static UnsafeBuffer tenantKey(final int ordinal, final long version, final String tenant)
    {
        final byte[] bytes = tenant.getBytes(StandardCharsets.UTF_8);
        final UnsafeBuffer key = new UnsafeBuffer(new byte[BucketKeys.PREFIX_LENGTH + bytes.length]);
        BucketKeys.putPrefix(key, 0, ordinal, version);
        key.putBytes(BucketKeys.PREFIX_LENGTH, bytes);
        return key;
    }

    public static long hashOf(final UnsafeBuffer key)
    {
        return KeyHash.hash(key, 0, key.capacity());
    }

    /**
     * A suffix (16 to 23 {@link #plain} bytes) such that the TENANT-scoped key
     * {@code prefix(ordinal, version) | fixed | suffix} hashes to {@code target}. {@code fixed} is what the edge puts
     * before the caller's text (nothing
     * for an SDK tenant, {@code "e:"} for an Envoy value).
     */
    public String suffixFor(final int ordinal, final long version, final String fixed, final long target)
    {
        final byte[] fixedBytes = fixed.getBytes(StandardCharsets.UTF_8);
        final int head = BucketKeys.PREFIX_LENGTH + fixedBytes.length;
        // A key of a whole number of 8-byte blocks (its tail is then empty), with at least 8 free bytes
        // before the solved block.
        final int length = ((head + 16 + 7) / 8) * 8;
        final byte[] key = new byte[length];
        final UnsafeBuffer view = new UnsafeBuffer(key);
        BucketKeys.putPrefix(view, 0, ordinal, version);
        System.arraycopy(fixedBytes, 0, key, BucketKeys.PREFIX_LENGTH, fixedBytes.length);
        final int solvedAt = length - 8;
        final int lastFreeBlock = solvedAt - 8; // drawn anew each try; the blocks before it once
        for (int i = head; i < lastFreeBlock; i++)
        {
            key[i] = (byte)draw();
        }
        long h = P2 ^ (length * P1);
        for (int i = 0; i + 8 <= lastFreeBlock; i += 8)
        {
            h = step(h, view.getLong(i, ByteOrder.LITTLE_ENDIAN));
        }
        final long before = h;
        // What the state must be after the solved block: undo the finaliser and the empty tail's step.
        final long afterTail = unmix(target);
        final long afterSolved = Long.rotateRight(afterTail * INV_P2, 31);
        final long wantedXor = Long.rotateRight(afterSolved * INV_P2, 31);
        while (true)
        {
            for (int i = Math.max(lastFreeBlock, head); i < solvedAt; i++)
            {
                key[i] = (byte)draw();
            }
            final long h1 = step(before, view.getLong(lastFreeBlock, ByteOrder.LITTLE_ENDIAN));
            final long word = (wantedXor ^ h1) * INV_P1;
            boolean ok = true;
            for (int k = 0; k < 8 && ok; k++)
            {
                ok = plain((int)(word >>> (8 * k)) & 0xFF);
            }
            if (ok)
            {
                view.putLong(solvedAt, word, ByteOrder.LITTLE_ENDIAN);
                return new String(key, head, length - head, StandardCharsets.US_ASCII);
            }
        }
    }

    /** {@link #suffixFor} for an SDK tenant: the whole tenant. */
    public String tenantFor(final int ordinal, final long version, final long target)
    {
        return suffixFor(ordinal, version, "", target);
    }

    private int draw()
    {
        int b;
        do
        {
            b = 0x21 + random.nextInt(0x7F - 0x21);
        }
        while (!plain(b));
        return b;
    }

    private static long step(final long h, final long word)
    {
        return Long.rotateLeft(h ^ (word * P1), 31) * P2;
    }

    private static long unmix(final long value)
    {
        long h = value;
        h ^= h >>> 33;
        h *= INV_M2;
        h ^= h >>> 33;
        h *= INV_M1;
        h ^= h >>> 33;
        return h;
    }

    private static long inverse(final long odd)
    {
        long x = odd;
        for (int i = 0; i < 6; i++)
        {
            x *= 2 - odd * x;
        }
        return x;
    }
}
