package dev.limiter.protocol;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.security.cert.X509Certificate;
import java.util.concurrent.ConcurrentLinkedQueue;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;

/**
 * A TLS server on 127.0.0.1 (an ephemeral port) built on the JDK's SSLContext: each connection
 * is answered byte for byte until it closes. And the client side: what certificate a server
 * presents. For the tests of {@link Pem} and {@link ReloadingTls}.
 */
final class JdkTlsServer implements AutoCloseable
{
    private final SSLServerSocket socket;
    private final Thread acceptor;
    private final ConcurrentLinkedQueue<Socket> open = new ConcurrentLinkedQueue<>();

    JdkTlsServer(final SSLContext context, final boolean needClientAuth) throws IOException
    {
        socket = (SSLServerSocket)context.getServerSocketFactory().createServerSocket(0, 50, InetAddress.getLoopbackAddress());
        socket.setNeedClientAuth(needClientAuth);
        acceptor = new Thread(this::accept, "tls-test-server");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    int port()
    {
        return socket.getLocalPort();
    }

    private void accept()
    {
        while (!socket.isClosed())
        {
            try
            {
                final Socket connection = socket.accept();
                open.add(connection);
                final Thread echo = new Thread(() -> echo(connection), "tls-test-echo");
                echo.setDaemon(true);
                echo.start();
            }
            catch (final IOException closed)
            {
                return;
            }
        }
    }

    private static void echo(final Socket connection)
    {
        try (connection; InputStream in = connection.getInputStream(); OutputStream out = connection.getOutputStream())
        {
            int b;
            while ((b = in.read()) >= 0)
            {
                out.write(b);
                out.flush();
            }
        }
        catch (final IOException e)
        {
            // the client went away, or its handshake failed
        }
    }

    @Override
    public void close() throws IOException
    {
        socket.close();
        for (final Socket connection : open)
        {
            connection.close();
        }
    }

    /** Opens a connection, completes the handshake and one round trip; the caller closes it. */
    static SSLSocket connect(final SSLContext client, final int port) throws IOException
    {
        final SSLSocket connection = (SSLSocket)client.getSocketFactory().createSocket(InetAddress.getLoopbackAddress(), port);
        connection.setSoTimeout(5000);
        connection.startHandshake();
        roundTrip(connection);
        return connection;
    }

    /** Sends a byte and reads it back: under TLS 1.3 a refused client certificate shows here. */
    static void roundTrip(final SSLSocket connection) throws IOException
    {
        connection.getOutputStream().write(42);
        connection.getOutputStream().flush();
        if (connection.getInputStream().read() != 42)
        {
            throw new IOException("closed by the server");
        }
    }

    /** The leaf certificate a new connection to {@code port} is shown. */
    static X509Certificate presented(final SSLContext client, final int port) throws IOException
    {
        try (SSLSocket connection = connect(client, port))
        {
            return (X509Certificate)connection.getSession().getPeerCertificates()[0];
        }
    }
}
