package dev.limiter.server.engine;

import java.security.SecureRandom;

/**
 * Ids of leases: 64 bits from a strong random generator each, so that an id is a capability that
 * only its grant's answer told (nobody can name another caller's lease by guessing or counting).
 * Drawn in blocks, so one costs a few nanoseconds. Owned by one thread (a frame router's).
 */
final class LeaseIds
{
    private static final int BLOCK_IDS = 512;

    private final SecureRandom random = new SecureRandom();
    private final byte[] block = new byte[BLOCK_IDS * Long.BYTES];
    private int next = block.length;

    /** A new id, never 0. */
    long next()
    {
        while (true)
        {
            if (next == block.length)
            {
                random.nextBytes(block);
                next = 0;
            }
            long id = 0;
            for (int i = 0; i < Long.BYTES; i++)
            {
                id = id << 8 | (block[next + i] & 0xFF);
            }
            next += Long.BYTES;
            if (id != 0)
            {
                return id;
            }
        }
    }
}
