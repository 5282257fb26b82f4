package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProtocolGenerationTest
{
    @Test
    void aHelloResultCarriesThisBuildsGenerationsAndOneWithFeatureBitsOnlyIsFromBeforeGenerations()
    {
        final ByteBuf result = Unpooled.buffer();
        HelloCodec.writeResult(result, 7, Features.NODE);
        assertEquals(new HelloCodec.Greeting(Features.NODE, ProtocolGeneration.CURRENT, ProtocolGeneration.OLDEST_PEER),
            HelloCodec.readGreeting(result));
        assertEquals(Features.NODE, HelloCodec.read(result), "a reader of the feature bits alone still reads them");

        final ByteBuf old = Unpooled.buffer();
        final int start = Frame.begin(old, MessageType.HELLO_RESULT, 7);
        old.writeLong(Features.SHARD_MAP);
        Frame.finish(old, start);
        assertEquals(new HelloCodec.Greeting(Features.SHARD_MAP, ProtocolGeneration.BEFORE_GENERATIONS,
            ProtocolGeneration.BEFORE_GENERATIONS), HelloCodec.readGreeting(old));

        final ByteBuf partial = Unpooled.buffer();
        final int partialStart = Frame.begin(partial, MessageType.HELLO_RESULT, 7);
        partial.writeLong(0).writeShort(2);
        Frame.finish(partial, partialStart);
        assertEquals("HELLO_RESULT body is 10 bytes; after its u64 of feature bits come a u32 protocol generation " +
            "and a u32 oldest generation (16 bytes)",
            assertThrows(IllegalArgumentException.class, () -> HelloCodec.readGreeting(partial)).getMessage());
    }

    @Test
    void peersWithinEachOthersRangeRunTogetherAndOthersAreRefusedNamingWhichSideMustChange()
    {
        assertNull(ProtocolGeneration.incompatibility(ProtocolGeneration.CURRENT, ProtocolGeneration.OLDEST_PEER));
        assertNull(ProtocolGeneration.incompatibility(ProtocolGeneration.BEFORE_GENERATIONS,
            ProtocolGeneration.BEFORE_GENERATIONS), "this build runs beside the builds from before generations");
        assertEquals("it speaks protocol generation 0 and this build (generation " + ProtocolGeneration.CURRENT +
            ") reads generation 1 or newer: upgrade it first", ProtocolGeneration.incompatibility(0, 0));
        assertEquals("it reads protocol generation 99 or newer and this build speaks generation " +
            ProtocolGeneration.CURRENT + ": this build is too old to join it; run a build of generation 99 or newer",
            ProtocolGeneration.incompatibility(99, 99));
    }

    @Test
    void theBuildReportsTheVersionMavenBuiltAndAnUnfilledValueReadsUnknown()
    {
        final BuildInfo build = BuildInfo.current();
        assertNotEquals(BuildInfo.UNKNOWN, build.version(), "Maven filters build.properties");
        assertTrue(build.describe().startsWith("limiter " + build.version() + " (commit "), build.describe());
        assertEquals(BuildInfo.UNKNOWN, BuildInfo.filled("${git.commit}"));
        assertEquals(BuildInfo.UNKNOWN, BuildInfo.filled(" "));
        assertEquals("1a2b3c", BuildInfo.filled("1a2b3c"));
    }
}
