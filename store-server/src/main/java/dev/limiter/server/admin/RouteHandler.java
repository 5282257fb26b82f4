package dev.limiter.server.admin;

import io.netty.handler.codec.http.FullHttpResponse;

import java.util.function.Consumer;

/** Answers one admin request through {@code reply}: at once, or when a change has committed. */
@FunctionalInterface
interface RouteHandler
{
    void handle(AdminCall call, Consumer<FullHttpResponse> reply);
}
