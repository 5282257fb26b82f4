package dev.limiter.bench.gateway;

import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

/**
 * The service behind the gateway: answers every request at once, 200 with a 3-byte body, on
 * 127.0.0.1 at the port given (Reactor Netty, as the gateway itself), until killed.
 */
public final class Upstream
{
    private Upstream()
    {
    }

    public static void main(final String[] args)
    {
        if (args.length != 1)
        {
            System.err.println("usage: Upstream PORT");
            System.exit(2);
        }
        final int port = Integer.parseInt(args[0]);
        final DisposableServer server = HttpServer.create().host("127.0.0.1").port(port)
            .handle((request, response) -> response.status(200).header("Content-Type", "text/plain")
                .sendString(Mono.just("ok\n")))
            .bindNow();
        System.out.println("upstream on 127.0.0.1:" + server.port());
        server.onDispose().block();
    }
}
