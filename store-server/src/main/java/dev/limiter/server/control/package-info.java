/**
 * The control plane's replicated state ({@link dev.limiter.server.control.PolicyState}, a state
 * machine that hands each command type through a {@link dev.limiter.server.control.CommandTable}
 * to the owner of its state: the policy catalogue, the published version rates, exemptions, SDK
 * reports, membership records and region shares), and where admin changes enter
 * ({@link dev.limiter.server.control.PolicyControl}: checked on a copy, then appended through a
 * {@link dev.limiter.server.control.PolicyLog}, which the cluster package provides).
 */
package dev.limiter.server.control;
