package dev.limiter.server.table;

import dev.limiter.protocol.Limit;
import org.agrona.DirectBuffer;

/**
 * The limit of a stored key, asked by the eviction sweep (is this idle key back to full?).
 * Given the bucket's policy ordinal and its key, so that an answer may depend on what the key
 * says (the policy version it was made under) and every replica sweeps alike.
 */
@FunctionalInterface
public interface BucketRates
{
    /**
     * @return the key's limit, or null when it is not known here (the key is then kept)
     */
    Limit rate(int policy, DirectBuffer key, int keyOffset, int keyLength);
}
