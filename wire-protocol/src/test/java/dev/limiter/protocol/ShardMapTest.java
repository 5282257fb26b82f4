package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The shard map a node sends and a client reads back, and what a client cannot read. */
class ShardMapTest
{
    @Test
    void aMapReadsBackAsWritten()
    {
        final ShardMap map = new ShardMap(new int[] {0, 1, 2, 0, 1, 2}, new String[] {"127.0.0.1:7401", "", "nöde:7403"});
        final ByteBuf buf = Unpooled.buffer();
        map.encode(buf);
        final ShardMap read = ShardMap.decode(buf, 0, buf.writerIndex());
        assertEquals(6, read.shards());
        assertEquals(3, read.groups());
        assertEquals("127.0.0.1:7401", read.leaderOf(3));
        assertEquals("", read.leaderOf(4), "a group without a leader names none");
        assertEquals("nöde:7403", read.leaderOf(5));
    }

    @Test
    void theOrdinalsOfTheSetInForceReadBackAndAMapWithoutThemIsStillRead()
    {
        final ShardMap map = new ShardMap(new int[] {0, 1}, new String[] {"a:1", "b:2"}, 7, java.util.Map.of("orders", 3, "search", 0));
        final ByteBuf buf = Unpooled.buffer();
        map.encode(buf);
        final ShardMap read = ShardMap.decode(buf, 0, buf.writerIndex());
        assertEquals(7, read.policySetVersion());
        assertEquals(java.util.Map.of("orders", 3, "search", 0), read.ordinals());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ShardMap.decode(buf, 0, buf.writerIndex() - 1)).getMessage()
            .contains("policy 1 is cut short"));

        final ByteBuf older = Unpooled.buffer();
        new ShardMap(new int[] {0, 1}, new String[] {"a:1", "b:2"}).encode(older);
        final int withoutOrdinals = older.writerIndex() - 10; // what a node sends that has no ordinals to give
        final ShardMap plain = ShardMap.decode(older, 0, withoutOrdinals);
        assertEquals(0, plain.policySetVersion());
        assertTrue(plain.ordinals().isEmpty());
        assertEquals("b:2", plain.leaderOf(1));
    }

    @Test
    void aBodyCutShortOrInconsistentIsRefusedSayingWhy()
    {
        final ByteBuf buf = Unpooled.buffer();
        new ShardMap(new int[] {0, 1}, new String[] {"a:1", "b:2"}).encode(buf);
        final int whole = buf.writerIndex();
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ShardMap.decode(buf, 0, 3)).getMessage().contains("at least 4 bytes"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ShardMap.decode(buf, 0, 6)).getMessage().contains("cut short"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ShardMap.decode(buf, 0, whole - 11)).getMessage()
            .contains("leader of group 1 is cut short"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ShardMap.decode(buf, 0, whole - 1)).getMessage()
            .contains("policy ordinals are cut short"));
        final ByteBuf wrongGroup = Unpooled.buffer().writeShort(1).writeShort(1).writeShort(5).writeShort(0);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ShardMap.decode(wrongGroup, 0, wrongGroup.writerIndex()))
            .getMessage().contains("names group 5 of 1"));
        assertThrows(IllegalArgumentException.class, () -> new ShardMap(new int[0], new String[] {""}));
        assertThrows(IllegalArgumentException.class, () -> new ShardMap(new int[] {0}, new String[] {"", ""}));
    }

    @Test
    void tenantsSpreadOverTheShardsAndAHashIsNeverZero()
    {
        final int[] perShard = new int[4];
        for (int i = 0; i < 4000; i++)
        {
            final long hash = ShardMap.tenantHash(("tenant-" + i).getBytes(StandardCharsets.UTF_8));
            assertNotEquals(0, hash);
            perShard[ShardMap.shardOf(hash, 4)]++;
        }
        for (final int count : perShard)
        {
            assertTrue(count > 800 && count < 1200, "about a quarter of the tenants on each shard: " + java.util.Arrays.toString(perShard));
        }
        assertEquals(ShardMap.tenantHash("acme".getBytes(StandardCharsets.UTF_8)), ShardMap.tenantHash("acme".getBytes(StandardCharsets.UTF_8)));
    }
}
