package dev.limiter.raft;

import org.apache.ratis.proto.grpc.RaftServerProtocolServiceGrpc;
import org.apache.ratis.thirdparty.io.grpc.Metadata;
import org.apache.ratis.thirdparty.io.grpc.MethodDescriptor;
import org.apache.ratis.thirdparty.io.grpc.ServerCall;
import org.apache.ratis.thirdparty.io.grpc.Status;
import org.junit.jupiter.api.Test;

import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

class InlineAppendsTest
{
    private final InlineAppends supplier = new InlineAppends();

    @Test
    void appendsRunOnTheThreadThatReadThem()
    {
        final Executor executor = supplier.getExecutor(callOf(RaftServerProtocolServiceGrpc.getAppendEntriesMethod()), new Metadata());
        assertNotNull(executor, "appends get an executor of their own");
        final AtomicReference<Thread> ranOn = new AtomicReference<>();
        executor.execute(() -> ranOn.set(Thread.currentThread()));
        assertSame(Thread.currentThread(), ranOn.get(), "an append message runs at once, on the transport thread");
    }

    @Test
    void votesAndSnapshotChunksKeepGrpcsExecutorBecauseTheyWriteToDiskOnTheCallingThread()
    {
        assertNull(supplier.getExecutor(callOf(RaftServerProtocolServiceGrpc.getRequestVoteMethod()), new Metadata()), "requestVote");
        assertNull(supplier.getExecutor(callOf(RaftServerProtocolServiceGrpc.getInstallSnapshotMethod()), new Metadata()), "installSnapshot");
        assertNull(supplier.getExecutor(callOf(RaftServerProtocolServiceGrpc.getStartLeaderElectionMethod()), new Metadata()), "startLeaderElection");
        assertNull(supplier.getExecutor(callOf(RaftServerProtocolServiceGrpc.getReadIndexMethod()), new Metadata()), "readIndex");
    }

    private static <Q, A> ServerCall<Q, A> callOf(final MethodDescriptor<Q, A> method)
    {
        return new ServerCall<>()
        {
            @Override
            public void request(final int numMessages)
            {
            }

            @Override
            public void sendHeaders(final Metadata headers)
            {
            }

            @Override
            public void sendMessage(final A message)
            {
            }

            @Override
            public void close(final Status status, final Metadata trailers)
            {
            }

            @Override
            public boolean isCancelled()
            {
                return false;
            }

            @Override
            public MethodDescriptor<Q, A> getMethodDescriptor()
            {
                return method;
            }
        };
    }
}
