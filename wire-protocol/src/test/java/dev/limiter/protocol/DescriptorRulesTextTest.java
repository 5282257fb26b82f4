package dev.limiter.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The text rule every descriptor field meets (valid UTF-8, no C0 or C1 control character, no DEL):
 * the eight-bytes-at-a-time check of printable ASCII agrees with the byte-by-byte one on every input.
 */
class DescriptorRulesTextTest
{
    private static final byte[] INTERESTING = {0x00, 0x1F, 0x20, 0x21, 0x7E, 0x7F, (byte)0x80, (byte)0x9F,
        (byte)0xA0, (byte)0xC2, (byte)0xC3, (byte)0xE2, (byte)0xF0, (byte)0xFF, 'a', '/', '-', '?'};

    @Test
    void aWordIsPrintableAsciiExactlyWhenEachOfItsBytesIs()
    {
        final SplittableRandom random = new SplittableRandom(48);
        for (int n = 0; n < 2_000_000; n++)
        {
            long word = 0;
            for (int b = 0; b < Long.BYTES; b++)
            {
                word = word << 8 | (randomByte(random) & 0xFF);
            }
            assertEquals(eachBytePrintable(word), DescriptorRules.printableAscii(word), Long.toHexString(word));
        }
        for (int b = 0; b < 256; b++)
        {
            final long word = 0x6161_6161_6161_6100L | b; // one chosen byte among printable ones, at each end
            assertEquals(b >= 0x20 && b <= 0x7E, DescriptorRules.printableAscii(word), Integer.toHexString(b));
            assertEquals(b >= 0x20 && b <= 0x7E, DescriptorRules.printableAscii(Long.reverseBytes(word)));
        }
    }

    @Test
    void aFieldIsJudgedAsTheByteByByteRuleJudgesItWhereverItsBadByteIs()
    {
        final SplittableRandom random = new SplittableRandom(7);
        for (int n = 0; n < 200_000; n++)
        {
            final byte[] field = new byte[random.nextInt(41)];
            for (int i = 0; i < field.length; i++)
            {
                field[i] = random.nextInt(4) == 0 ? randomByte(random) : (byte)('a' + random.nextInt(26));
            }
            final ByteBuf buf = Unpooled.wrappedBuffer(new byte[3], field, new byte[5]);
            assertEquals(byteByByte(buf, 3, field.length), DescriptorRules.checkUtf8NoControl(buf, 3, field.length));
        }
    }

    @Test
    void wellFormedTextOfAnyLengthPassesAndOneBadByteAnywhereIsCaught()
    {
        final String text = "tenant-éü-/v1/orders/12345-東京-𝄞-abcdefghijklmnop";
        final byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
        for (int length = 0; length <= utf8.length; length++)
        {
            final ByteBuf ascii = Unpooled.wrappedBuffer("abcdefghijklmnopqrstuvwxyz0123456789-/_.~ABCDEFGHIJ"
                .substring(0, Math.min(length, 50)).getBytes(StandardCharsets.US_ASCII));
            assertEquals(FieldProblem.NONE,
                DescriptorRules.checkUtf8NoControl(ascii, 0, ascii.readableBytes()));
        }
        assertEquals(FieldProblem.NONE,
            DescriptorRules.checkUtf8NoControl(Unpooled.wrappedBuffer(utf8), 0, utf8.length));
        for (int at = 0; at < 24; at++)
        {
            final byte[] field = "abcdefghijklmnopqrstuvwx".getBytes(StandardCharsets.US_ASCII);
            field[at] = 0x7F;
            assertEquals(FieldProblem.CONTROL_CHARACTER,
                DescriptorRules.checkUtf8NoControl(Unpooled.wrappedBuffer(field), 0, field.length), "DEL at " + at);
            field[at] = 0x0A;
            assertEquals(FieldProblem.CONTROL_CHARACTER,
                DescriptorRules.checkUtf8NoControl(Unpooled.wrappedBuffer(field), 0, field.length), "LF at " + at);
            field[at] = (byte)0xC3;
            assertEquals(FieldProblem.INVALID_UTF8,
                DescriptorRules.checkUtf8NoControl(Unpooled.wrappedBuffer(field), 0, field.length),
                "lone lead at " + at);
        }
    }

    private static byte randomByte(final SplittableRandom random)
    {
        return random.nextBoolean() ? INTERESTING[random.nextInt(INTERESTING.length)] : (byte)random.nextInt(256);
    }

    private static boolean eachBytePrintable(final long word)
    {
        for (int b = 0; b < Long.BYTES; b++)
        {
            final int v = (int)(word >>> (8 * b)) & 0xFF;
            if (v < 0x20 || v > 0x7E)
            {
                return false;
            }
        }
        return true;
    }

    /** The rule one byte (or one UTF-8 sequence) at a time. */
    private static FieldProblem byteByByte(final ByteBuf buf, final int offset, final int length)
    {
        int i = offset;
        final int end = offset + length;
        while (i < end)
        {
            final int b0 = buf.getByte(i) & 0xFF;
            if (b0 < 0x80)
            {
                if (b0 < 0x20 || b0 == 0x7F)
                {
                    return FieldProblem.CONTROL_CHARACTER;
                }
                i++;
                continue;
            }
            final int sequence = Utf8.sequenceLength(buf, i, end);
            if (sequence < 0)
            {
                return FieldProblem.INVALID_UTF8;
            }
            if (Utf8.isC1Control(buf, i, sequence))
            {
                return FieldProblem.CONTROL_CHARACTER;
            }
            i += sequence;
        }
        return FieldProblem.NONE;
    }
}
