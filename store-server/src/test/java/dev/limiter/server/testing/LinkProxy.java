package dev.limiter.server.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A TCP proxy that makes a link slow and lossy, for a kernel without netem: every chunk it reads
 * is passed on a settable delay later, and a settable share of the chunks (per mille) is held a
 * settable stall longer, as a lost segment is until TCP sends it again (Linux waits at least
 * 200 ms); later chunks wait behind a held one, in order, as behind a lost segment. Run as its own
 * process, in a member's network namespace, with the settings changed on its standard input:
 * {@code set <delay ms> <loss per mille> <stall ms>}. Bounded: at most 64 connections, and at
 * most 256 chunks (16 KiB each) waiting in each direction of each (its reader waits when full).
 *
 * <p>{@code java dev.limiter.server.LinkProxy <listen host> <listen port> <target host> <target port>};
 * it prints {@code listening} once it accepts connections, a line for each connection and each
 * change of settings, and ends when its standard input ends.
 */
public final class LinkProxy
{
    private static final int MAX_CONNECTIONS = 64;
    private static final int CHUNK_BYTES = 16 * 1024;
    private static final int CHUNKS_WAITING = 256;

    private final InetSocketAddress target;
    private final Semaphore connections = new Semaphore(MAX_CONNECTIONS);
    private volatile long delayNanos;
    private volatile int lossPerMille;
    private volatile long stallNanos;

    private record Chunk(long dueNanos, byte[] bytes)
    {
    }

    private LinkProxy(final InetSocketAddress target)
    {
        this.target = target;
    }

    public static void main(final String[] args) throws IOException
    {
        if (args.length != 4)
        {
            throw new IllegalArgumentException(
                "usage: LinkProxy <listen host> <listen port> <target host> <target port>, was " +
                Arrays.toString(args));
        }
        final LinkProxy proxy = new LinkProxy(new InetSocketAddress(args[2], Integer.parseInt(args[3])));
        final ServerSocket listener = new ServerSocket(Integer.parseInt(args[1]), 50, InetAddress.getByName(args[0]));
        daemon("link-proxy-accept", () -> proxy.accept(listener));
        System.out.println("listening");
        System.out.flush();
        proxy.readSettings(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)));
        System.exit(0);
    }

    /** Applies each {@code set <delay ms> <loss per mille> <stall ms>} line until standard input ends. */
    private void readSettings(final BufferedReader in) throws IOException
    {
        for (String line = in.readLine(); line != null; line = in.readLine())
        {
            final String[] words = line.trim().split("\\s+");
            if (words.length != 4 || !words[0].equals("set"))
            {
                System.out.println("ignored '" + line + "': expected 'set <delay ms> <loss per mille> <stall ms>'");
                continue;
            }
            final int loss = Integer.parseInt(words[2]);
            if (loss < 0 || loss > 1000)
            {
                System.out.println("ignored '" + line + "': the loss is per mille, 0 to 1000");
                continue;
            }
            delayNanos = TimeUnit.MILLISECONDS.toNanos(Long.parseLong(words[1]));
            lossPerMille = loss;
            stallNanos = TimeUnit.MILLISECONDS.toNanos(Long.parseLong(words[3]));
            System.out.println("delay " + words[1] + " ms, loss " + loss + " per mille, stall " + words[3] + " ms");
            System.out.flush();
        }
    }

    private void accept(final ServerSocket listener)
    {
        while (true)
        {
            try
            {
                connections.acquireUninterruptibly();
                final Socket client = listener.accept();
                final Socket server = new Socket();
                try
                {
                    server.connect(target, 2000);
                }
                catch (final IOException e)
                {
                    client.close();
                    connections.release();
                    continue;
                }
                System.out.println("connection from " + client.getRemoteSocketAddress() + " to " + target);
                System.out.flush();
                client.setTcpNoDelay(true);
                server.setTcpNoDelay(true);
                final Runnable closeBoth = new Runnable()
                {
                    private boolean closed;

                    @Override
                    public synchronized void run()
                    {
                        if (!closed)
                        {
                            closed = true;
                            closeQuietly(client);
                            closeQuietly(server);
                            connections.release();
                        }
                    }
                };
                pipe(client, server, closeBoth);
                pipe(server, client, closeBoth);
            }
            catch (final IOException e)
            {
                return; // the listener closed
            }
        }
    }

    /** Passes what {@code from} sends on to {@code to}, each chunk when due; closes both when either side ends. */
    private void pipe(final Socket from, final Socket to, final Runnable closeBoth) throws IOException
    {
        final BlockingQueue<Chunk> waiting = new ArrayBlockingQueue<>(CHUNKS_WAITING);
        final InputStream in = from.getInputStream();
        final OutputStream out = to.getOutputStream();
        final SplittableRandom random = new SplittableRandom(from.getPort() * 31L + to.getPort());
        daemon("link-proxy-read", () ->
        {
            final byte[] buffer = new byte[CHUNK_BYTES];
            try
            {
                for (int n = in.read(buffer); n >= 0; n = in.read(buffer))
                {
                    final long stall = random.nextInt(1000) < lossPerMille ? stallNanos : 0;
                    waiting.put(new Chunk(System.nanoTime() + delayNanos + stall, Arrays.copyOf(buffer, n)));
                }
                waiting.put(new Chunk(System.nanoTime() + delayNanos, new byte[0])); // the end, after what came before
            }
            catch (final IOException | InterruptedException e)
            {
                closeBoth.run();
            }
        });
        daemon("link-proxy-write", () ->
        {
            try
            {
                while (true)
                {
                    final Chunk chunk = waiting.take();
                    for (long wait = chunk.dueNanos() - System.nanoTime(); wait > 0;
                        wait = chunk.dueNanos() - System.nanoTime())
                    {
                        LockSupport.parkNanos(wait);
                    }
                    if (chunk.bytes().length == 0)
                    {
                        break;
                    }
                    out.write(chunk.bytes());
                    out.flush();
                }
            }
            catch (final IOException | InterruptedException e)
            {
                // closed: fall through
            }
            closeBoth.run();
        });
    }

    private static void closeQuietly(final Socket socket)
    {
        try
        {
            socket.close();
        }
        catch (final IOException ignored)
        {
            // closing anyway
        }
    }

    private static void daemon(final String name, final Runnable body)
    {
        final Thread thread = new Thread(body, name);
        thread.setDaemon(true);
        thread.start();
    }
}
