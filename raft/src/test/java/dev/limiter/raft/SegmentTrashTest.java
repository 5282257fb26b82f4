package dev.limiter.raft;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SegmentTrashTest
{
    @TempDir
    Path dir;

    private Path segment(final Path logDir, final String name) throws IOException
    {
        return Files.write(logDir.resolve(name), new byte[1024]);
    }

    @Test
    void closedSegmentsASnapshotCoversGetASecondNameThatGoesOnlyOnceTheLogsNameIsGone() throws IOException
    {
        final Path log = Files.createDirectories(dir.resolve("current"));
        final Path first = segment(log, "log_0-9");
        segment(log, "log_10-19");
        segment(log, "log_inprogress_20");
        final Path trashDir = dir.resolve("purged-segments");
        final SegmentTrash trash = new SegmentTrash(log, trashDir);

        assertEquals(1, trash.link(15), "only the segment wholly at or below the snapshot");
        assertEquals(2, Files.getAttribute(first, "unix:nlink"), "one file, two names: deleting one frees nothing");
        assertEquals(1, trash.link(19), "the next one; the first is linked already");
        assertFalse(Files.exists(trashDir.resolve("log_inprogress_20")), "the open segment is never linked");

        assertEquals(2, trash.empty(), "Ratis has purged nothing yet: both names stay");
        Files.delete(first); // Ratis purges the first segment: only a name goes
        assertEquals(1, trash.empty());
        assertFalse(Files.exists(trashDir.resolve("log_0-9")), "its trash name went, which freed the blocks");
        assertTrue(Files.exists(log.resolve("log_10-19")), "the log keeps what Ratis kept");

        trash.clear(); // a restart
        assertEquals(0, trash.empty());
        assertTrue(Files.exists(log.resolve("log_10-19")), "clearing the trash never touches the log");
    }

    @Test
    void withoutLinksTheLogIsLeftAsItWasAndLinkingStops() throws IOException
    {
        final Path log = dir.resolve("no-such-log");
        final SegmentTrash trash = new SegmentTrash(log, dir.resolve("purged-segments"));
        assertEquals(0, trash.link(100));
        Files.createDirectories(log);
        segment(log, "log_0-9");
        assertEquals(0, trash.link(100), "after one failure Ratis frees segments itself, as without the trash");
        assertEquals(0, trash.empty());
    }
}
