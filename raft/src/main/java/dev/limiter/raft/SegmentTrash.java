package dev.limiter.raft;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Keeps the freeing of purged log segments off Ratis' log thread. After a snapshot, Ratis deletes
 * the closed segments it covers on the thread that also writes and syncs new entries, and freeing
 * the blocks of a file costs time in proportion to its size: under load the entries between two
 * snapshots fill hundreds of MiB, and every commit would wait while they are freed (docs/cluster.md,
 * "Snapshots off the apply thread", has the measurements).
 *
 * <p>So before Ratis learns a snapshot's index, each closed segment the snapshot covers gets a
 * second name (a hard link) in a trash directory beside the log: Ratis' delete then only removes a
 * name, and the blocks are freed when the snapshot writer thread deletes the trash name, once
 * Ratis' name is gone. Where links cannot be made (another file system, say), Ratis frees the
 * segments itself as before. Single-threaded: the snapshot writer calls every method but the
 * constructor.
 */
final class SegmentTrash
{
    private static final Logger LOG = LoggerFactory.getLogger(SegmentTrash.class);
    /** A closed segment: {@code log_<first index>-<last index>} (the open one is {@code log_inprogress_<first>}). */
    private static final Pattern CLOSED_SEGMENT = Pattern.compile("log_(\\d+)-(\\d+)");

    private final Path logDir;
    private final Path trashDir;
    private boolean linksWork = true;
    private final AtomicLong freed = new AtomicLong();

    /**
     * @param logDir   where Ratis keeps the group's log segments
     * @param trashDir a directory of our own on the same file system
     */
    SegmentTrash(final Path logDir, final Path trashDir)
    {
        this.logDir = logDir;
        this.trashDir = trashDir;
    }

    /**
     * Gives every closed segment whose entries all lie at or below {@code snapshotIndex} a name in
     * the trash (those Ratis may delete once it learns of a snapshot at that index).
     *
     * @return segments linked now
     */
    int link(final long snapshotIndex)
    {
        if (!linksWork)
        {
            return 0;
        }
        int linked = 0;
        try
        {
            Files.createDirectories(trashDir);
            try (DirectoryStream<Path> segments = Files.newDirectoryStream(logDir, "log_*"))
            {
                for (final Path segment : segments)
                {
                    final Matcher closed = CLOSED_SEGMENT.matcher(segment.getFileName().toString());
                    if (closed.matches() && Long.parseLong(closed.group(2)) <= snapshotIndex)
                    {
                        try
                        {
                            Files.createLink(trashDir.resolve(segment.getFileName()), segment);
                            linked++;
                        }
                        catch (final FileAlreadyExistsException alreadyLinked)
                        {
                            // linked after an earlier snapshot that Ratis did not purge up to
                        }
                    }
                }
            }
        }
        catch (final IOException | UnsupportedOperationException | NumberFormatException e)
        {
            // Ratis frees the segments itself then, on its log thread, as without this class.
            linksWork = false;
            LOG.warn("cannot link purged log segments into {} ({}); the Raft log thread frees them itself", trashDir, e.toString());
        }
        return linked;
    }

    /**
     * Frees the segments Ratis has deleted: removes each trash name whose log name is gone.
     *
     * @return names left in the trash (segments Ratis has not purged yet)
     */
    int empty()
    {
        int left = 0;
        if (!Files.isDirectory(trashDir))
        {
            return 0;
        }
        try (DirectoryStream<Path> names = Files.newDirectoryStream(trashDir))
        {
            for (final Path name : names)
            {
                if (Files.exists(logDir.resolve(name.getFileName())))
                {
                    left++;
                }
                else if (Files.deleteIfExists(name))
                {
                    freed.incrementAndGet();
                }
            }
        }
        catch (final IOException e)
        {
            LOG.warn("could not empty {} of purged log segments: {}", trashDir, e.toString());
        }
        return left;
    }

    /** Segments freed here rather than on Ratis' log thread (any thread). */
    long freed()
    {
        return freed.get();
    }

    /** At start: every name in the trash goes (a segment Ratis still holds keeps its own name). */
    void clear()
    {
        if (!Files.isDirectory(trashDir))
        {
            return;
        }
        try (DirectoryStream<Path> names = Files.newDirectoryStream(trashDir))
        {
            for (final Path name : names)
            {
                Files.deleteIfExists(name);
            }
        }
        catch (final IOException e)
        {
            LOG.warn("could not clear {} of purged log segments: {}", trashDir, e.toString());
        }
    }
}
