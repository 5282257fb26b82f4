package dev.limiter.raft;

import org.apache.ratis.proto.grpc.RaftServerProtocolServiceGrpc;
import org.apache.ratis.thirdparty.io.grpc.Metadata;
import org.apache.ratis.thirdparty.io.grpc.ServerCall;
import org.apache.ratis.thirdparty.io.grpc.ServerCallExecutorSupplier;

import java.util.concurrent.Executor;

/**
 * Runs the messages of the Raft port's append streams on gRPC's transport thread that read them,
 * instead of handing each to gRPC's executor first.
 *
 * <p>Why: a follower's path for one append was transport thread, gRPC executor, Ratis' server
 * pool (which writes the reply), so every append woke one thread more than it needs to. Ratis
 * 3.2's follower takes an append on the calling thread only as far as queuing it for its log
 * worker, and hands the reply to its own server pool, so what now runs on the transport thread is
 * that queuing. What can block there: the member's monitor, and persisting a new term on the
 * first append from a new leader (a small synced write, once per election). Votes and snapshot
 * chunks, which write to disk on the calling thread, keep gRPC's executor.
 */
final class InlineAppends implements ServerCallExecutorSupplier
{
    /** gRPC's full name of the follower's append stream. */
    static final String APPEND_ENTRIES = RaftServerProtocolServiceGrpc.getAppendEntriesMethod().getFullMethodName();

    private static final Executor ON_THE_CALLING_THREAD = Runnable::run;

    @Override
    public <Q, A> Executor getExecutor(final ServerCall<Q, A> call, final Metadata headers)
    {
        return APPEND_ENTRIES.equals(call.getMethodDescriptor().getFullMethodName()) ? ON_THE_CALLING_THREAD : null;
    }
}
