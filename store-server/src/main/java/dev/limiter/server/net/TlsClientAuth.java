package dev.limiter.server.net;

/** Whether clients of a node's data and admin ports must present a TLS certificate. */
public enum TlsClientAuth
{
    /** Clients are not asked for a certificate (they still verify the node's). */
    NONE,
    /** Clients may present one; it is verified if they do. */
    OPTIONAL,
    /** Clients must present a certificate signed by a CA of the node's bundle (mutual TLS). */
    REQUIRE
}
