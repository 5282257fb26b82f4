/** The node's Prometheus registry and the counters and timers the other packages record into. */
package dev.limiter.server.metrics;
