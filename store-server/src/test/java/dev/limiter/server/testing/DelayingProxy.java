package dev.limiter.server.testing;

import dev.limiter.protocol.Frame;
import dev.limiter.protocol.MessageType;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A loopback TCP proxy in front of one node that holds every byte the node sends back for a
 * settable time: a store that is slow, not dead. Requests pass at once; answers keep their order
 * (a chunk is never released before the one read ahead of it, even when the delay shrinks).
 */
public final class DelayingProxy implements AutoCloseable
{
    private final ServerSocket listener;
    private final int targetPort;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final java.util.concurrent.atomic.LongAdder acquireFrames = new java.util.concurrent.atomic.LongAdder();
    private volatile long delayNanos;
    private volatile boolean closed;

    private record Chunk(long dueNanos, byte[] bytes)
    {
    }

    public DelayingProxy(final int targetPort) throws IOException
    {
        this.targetPort = targetPort;
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        daemon("proxy-accept", this::acceptLoop);
    }

    public int port()
    {
        return listener.getLocalPort();
    }

    /** From now on, answers read from the node are passed on this many milliseconds later. */
    public void delayAnswers(final long millis)
    {
        delayNanos = TimeUnit.MILLISECONDS.toNanos(millis);
    }

    private void acceptLoop()
    {
        while (!closed)
        {
            try
            {
                final Socket client = listener.accept();
                final Socket node = new Socket();
                try
                {
                    node.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), targetPort), 1000);
                }
                catch (final IOException e)
                {
                    closeQuietly(client); // the node is down: the SDK sees the connection close and retries
                    continue;
                }
                client.setTcpNoDelay(true);
                node.setTcpNoDelay(true);
                sockets.add(client);
                sockets.add(node);
                daemon("proxy-requests", () -> pump(client, node, new RequestCounter()));
                final BlockingQueue<Chunk> answers = new LinkedBlockingQueue<>();
                daemon("proxy-answers-read", () -> readAnswers(node, client, answers));
                daemon("proxy-answers-write", () -> writeAnswers(answers, client, node));
            }
            catch (final IOException e)
            {
                return; // the listener closed
            }
        }
    }

    /** Frames with acquires (ACQUIRE, BATCH_ACQUIRE) passed on to the node so far. */
    public long acquireFramesSent()
    {
        return acquireFrames.sum();
    }

    /** Follows the length-prefixed frames of one connection's requests and counts those with acquires. */
    private final class RequestCounter
    {
        private final byte[] head = new byte[Frame.TYPE_OFFSET + 1]; // length, version, type
        private int headFill;
        private long skip;

        void accept(final byte[] bytes, final int length)
        {
            int i = 0;
            while (i < length)
            {
                if (skip > 0)
                {
                    final int k = (int)Math.min(skip, length - i);
                    skip -= k;
                    i += k;
                    continue;
                }
                head[headFill++] = bytes[i++];
                if (headFill == head.length)
                {
                    final int type = head[Frame.TYPE_OFFSET] & 0xFF;
                    if (type == MessageType.ACQUIRE || type == MessageType.BATCH_ACQUIRE)
                    {
                        acquireFrames.increment();
                    }
                    skip = java.nio.ByteBuffer.wrap(head).getInt() - (head.length - Frame.LENGTH_FIELD_LENGTH);
                    headFill = 0;
                }
            }
        }
    }

    private static void pump(final Socket from, final Socket to, final RequestCounter counter)
    {
        final byte[] buffer = new byte[16 * 1024];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream())
        {
            int n;
            while ((n = in.read(buffer)) >= 0)
            {
                counter.accept(buffer, n);
                out.write(buffer, 0, n);
            }
        }
        catch (final IOException ignored)
        {
            // either side closed
        }
        closeQuietly(from);
        closeQuietly(to);
    }

    private void readAnswers(final Socket node, final Socket client, final BlockingQueue<Chunk> answers)
    {
        final byte[] buffer = new byte[16 * 1024];
        long lastDue = 0;
        try
        {
            final InputStream in = node.getInputStream();
            int n;
            while ((n = in.read(buffer)) >= 0)
            {
                final long due = Math.max(System.nanoTime() + delayNanos, lastDue);
                lastDue = due;
                answers.add(new Chunk(due, java.util.Arrays.copyOf(buffer, n)));
            }
        }
        catch (final IOException ignored)
        {
            // either side closed
        }
        answers.add(new Chunk(0, null));
    }

    private static void writeAnswers(final BlockingQueue<Chunk> answers, final Socket client, final Socket node)
    {
        try
        {
            final OutputStream out = client.getOutputStream();
            while (true)
            {
                final Chunk chunk = answers.take();
                if (chunk.bytes() == null)
                {
                    break;
                }
                final long wait = chunk.dueNanos() - System.nanoTime();
                if (wait > 0)
                {
                    TimeUnit.NANOSECONDS.sleep(wait);
                }
                out.write(chunk.bytes());
            }
        }
        catch (final IOException | InterruptedException ignored)
        {
            // either side closed
        }
        closeQuietly(client);
        closeQuietly(node);
    }

    private static void daemon(final String name, final Runnable body)
    {
        final Thread thread = new Thread(body, name);
        thread.setDaemon(true);
        thread.start();
    }

    private static void closeQuietly(final Socket socket)
    {
        try
        {
            socket.close();
        }
        catch (final IOException ignored)
        {
            // already closed
        }
    }

    @Override
    public void close() throws IOException
    {
        closed = true;
        listener.close();
        sockets.forEach(DelayingProxy::closeQuietly);
    }
}
