package dev.limiter.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** ./limiter status refuses an address that is not host:port as bad input (exit 2), naming it, before asking anybody. */
class StatusCommandTest
{
    private static String refusal(final String server)
    {
        final PrintStream stderr = System.err;
        final ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try
        {
            assertEquals(2, new CommandLine(new StatusCommand()).execute("--server", server), "exit status for --server " + server);
        }
        finally
        {
            System.setErr(stderr);
        }
        return captured.toString(StandardCharsets.UTF_8);
    }

    @Test
    void anAddressThatIsNotHostAndPortIsBadInput()
    {
        final String noPort = refusal("nohost");
        assertTrue(noPort.contains("'nohost' is not host:port"), noPort);
        final String badPort = refusal("127.0.0.1:99999");
        assertTrue(badPort.contains("port 99999 outside 1-65535"), badPort);
        final String notANumber = refusal("127.0.0.1:abc");
        assertTrue(notANumber.contains("not a number"), notANumber);
    }
}
