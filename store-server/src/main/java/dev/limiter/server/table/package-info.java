/**
 * The off-heap bucket table of one shard (Agrona buffers, open addressing, a key arena), read and
 * written only by the shard's owning thread; what other threads may read it publishes.
 */
package dev.limiter.server.table;
