package dev.limiter.server.table;

import dev.limiter.protocol.TokenBucket;
import org.agrona.DirectBuffer;

/**
 * The rate a stored bucket refills at, asked by the eviction sweep (is this idle bucket full?).
 * Given the bucket's policy ordinal and its key, so that an answer may depend on what the key
 * says (the policy version it was made under) and every replica sweeps alike.
 */
@FunctionalInterface
public interface BucketRates
{
    /**
     * @return the bucket's rate, or null when it is not known here (the bucket is then kept)
     */
    TokenBucket.Rate rate(int policy, DirectBuffer key, int keyOffset, int keyLength);
}
