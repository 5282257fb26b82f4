package dev.limiter.protocol;

import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class IpAddressesTest
{
    private static byte[] parse(final String text)
    {
        final byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        final byte[] out = new byte[IpAddresses.LENGTH];
        assertTrue(IpAddresses.parse(Unpooled.wrappedBuffer(bytes), 0, bytes.length, out, 0), text);
        return out;
    }

    private static boolean valid(final String text)
    {
        final byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        return IpAddresses.parse(Unpooled.wrappedBuffer(bytes), 0, bytes.length, new byte[16], 0);
    }

    /** The JDK's parser, mapped to 16 bytes, as the reference. */
    private static byte[] reference(final String text) throws Exception
    {
        final byte[] address = InetAddress.getByName(text).getAddress();
        if (address.length == 16)
        {
            return address;
        }
        final byte[] mapped = new byte[16];
        mapped[10] = (byte)0xFF;
        mapped[11] = (byte)0xFF;
        System.arraycopy(address, 0, mapped, 12, 4);
        return mapped;
    }

    @Test
    void shouldAgreeWithTheJdkOnValidLiterals() throws Exception
    {
        for (final String text : new String[] {
            "0.0.0.0", "127.0.0.1", "203.0.113.7", "255.255.255.255",
            "::", "::1", "1::", "2001:db8::1", "2001:DB8:0:0:8:800:200C:417A", "fe80::1:2:3:4",
            "1:2:3:4:5:6:7:8", "1:2:3:4:5:6::8", "::ffff:192.0.2.1", "64:ff9b::192.0.2.33", "1:2:3:4:5:6:1.2.3.4" })
        {
            assertArrayEquals(reference(text), parse(text), text);
        }
    }

    @Test
    void shouldGiveOneValueForEverySpellingOfAnAddress()
    {
        assertArrayEquals(parse("::1"), parse("0:0:0:0:0:0:0:1"));
        assertArrayEquals(parse("::1"), parse("0000::0001"));
        assertArrayEquals(parse("1.2.3.4"), parse("::ffff:1.2.3.4"));
        assertArrayEquals(parse("2001:db8::a"), parse("2001:DB8:0::A"));
    }

    @Test
    void shouldRejectWhatIsNotAnAddress()
    {
        for (final String text : new String[] {
            "", "abc", "1.2.3", "1.2.3.4.5", "256.1.1.1", "01.2.3.4", "1..2.3", "1.2.3.4.", ".1.2.3.4",
            ":::", "1:::2", "1::2::3", ":1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7:8::", "12345::",
            "g::1", "1:2:3:4:5:6:7:", "::1.2.3", "1.2.3.4::", "fe80::1%eth0", "[::1]", "1:2:3:4:5:6:7:1.2.3.4" })
        {
            assertFalse(valid(text), text);
        }
    }
}
