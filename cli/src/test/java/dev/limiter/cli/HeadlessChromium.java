package dev.limiter.cli;

import org.junit.jupiter.api.Assumptions;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Debian's chromium, headless, loading one local page and printing its DOM once its scripts ran
 * ({@code --dump-dom}), with the page's console on stderr ({@code CONSOLE} lines). Skipped with the
 * reason where it is not installed, failed instead when {@code LIMITER_REQUIRE_BROWSER=1} (.ci/run).
 */
final class HeadlessChromium
{
    static final Path BINARY = Path.of("/usr/bin/chromium");

    /** The DOM after the page's scripts, and what the page wrote to its console (one line each). */
    record Page(String dom, List<String> console)
    {
    }

    private HeadlessChromium()
    {
    }

    /** Aborts the test (or fails it under LIMITER_REQUIRE_BROWSER=1) when chromium is missing. */
    static void require()
    {
        if (Files.isExecutable(BINARY))
        {
            return;
        }
        final String missing = BINARY + " is not installed: the report's browser check needs Debian's chromium " +
            "(apt-get install chromium); .ci/run installs it";
        if ("1".equals(System.getenv("LIMITER_REQUIRE_BROWSER")))
        {
            fail(missing + " (LIMITER_REQUIRE_BROWSER=1)");
        }
        Assumptions.abort(missing);
    }

    /** Loads {@code page} in a fresh profile under {@code scratch} and returns its DOM and console. */
    static Page load(final Path page, final Path scratch) throws IOException, InterruptedException
    {
        require();
        final Path profile = Files.createTempDirectory(scratch, "chromium-profile");
        final Path dom = scratch.resolve("dom-" + System.nanoTime() + ".html");
        final Path log = scratch.resolve("chromium-" + System.nanoTime() + ".log");
        final Process chromium = new ProcessBuilder(BINARY.toString(), "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0", "--dump-dom",
            page.toUri().toString())
            .redirectOutput(dom.toFile()).redirectError(log.toFile()).start();
        try
        {
            assertTrue(chromium.waitFor(30, TimeUnit.SECONDS), "chromium did not finish within 30 s");
        }
        finally
        {
            chromium.destroyForcibly();
            chromium.waitFor(10, TimeUnit.SECONDS);
        }
        final List<String> console = Files.readAllLines(log, StandardCharsets.UTF_8).stream()
            .filter(line -> line.contains(":CONSOLE")).toList();
        return new Page(Files.readString(dom, StandardCharsets.UTF_8), console);
    }
}
