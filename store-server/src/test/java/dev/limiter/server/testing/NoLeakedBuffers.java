package dev.limiter.server.testing;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * After a test class ({@code @ExtendWith(NoLeakedBuffers.class)}): every Netty buffer its nodes took was released,
 * as {@link RecordingLeakDetector} saw it, even of nodes stopped mid-traffic (killed leaders, STRICT frames
 * waiting on the log).
 */
public final class NoLeakedBuffers implements AfterAllCallback
{
    @Override
    public void afterAll(final ExtensionContext context) throws InterruptedException
    {
        final List<String> leaks = RecordingLeakDetector.collectLeaks();
        assertTrue(leaks.isEmpty(), "Netty buffers leaked:\n" + String.join("\n", leaks));
    }
}
