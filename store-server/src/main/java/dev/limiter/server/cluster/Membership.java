package dev.limiter.server.cluster;

import dev.limiter.protocol.policy.Member;
import dev.limiter.protocol.policy.MemberList;
import dev.limiter.protocol.policy.MembersChange;
import dev.limiter.raft.NotLeaderException;
import dev.limiter.raft.RaftNodeConfig;
import dev.limiter.server.control.PolicyControl;
import dev.limiter.server.control.PolicyState;

import java.net.InetSocketAddress;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Pattern;

/**
 * Membership changes, as the authenticated admin API asks for them (the data port never changes
 * membership): one member added or removed at a time, on the control group's leader, recorded in
 * the audit log before Raft changes the configuration of every group (a leader that removes itself
 * can record nothing after).
 */
public final class Membership
{
    private static final Pattern ID = Pattern.compile("[A-Za-z0-9_-]{1,32}");

    /** Why a request cannot be done: answered with this HTTP status and message; nothing changed. */
    public static final class Refused extends RuntimeException
    {
        private static final long serialVersionUID = 1L;

        public final int status;

        Refused(final int status, final String message)
        {
            super(message, null, false, false);
            this.status = status;
        }
    }

    private final ReplicationGroups groups;
    /** The control group's replication: its members and leader are the cluster's. */
    private final Replication replication;
    private final PolicyControl control;
    private final int raftPortOffset;

    /**
     * @param groups null on a single node (which has no members to change)
     */
    public Membership(final ReplicationGroups groups, final PolicyControl control, final int raftPortOffset)
    {
        this.groups = groups;
        this.replication = groups == null ? null : groups.control();
        this.control = control;
        this.raftPortOffset = raftPortOffset;
    }

    /** The members in force and the leader this node knows of. */
    public MemberList list()
    {
        requireCluster();
        final MemberList.Builder list = MemberList.newBuilder();
        replication.members().forEach((id, address) -> list.addMembers(Member.newBuilder().setId(id).setAddress(address)));
        final String leader = replication.leaderId();
        return list.setLeader(leader == null ? "" : leader).build();
    }

    /** Adds a member (started with --join) at its data-plane address; completes with the new list. */
    public CompletableFuture<MemberList> add(final String actor, final String id, final String address, final String reason)
    {
        requireCluster();
        if (!ID.matcher(id).matches())
        {
            throw new Refused(400, "member id '" + id + "' must match [A-Za-z0-9_-]{1,32}; nothing changed");
        }
        final InetSocketAddress parsed = parseAddress(id, address);
        final Map<String, String> before = replication.members();
        final String existing = before.get(id);
        if (existing != null)
        {
            throw new Refused(409, id + " is already a member at " + existing + "; remove it first to move it; nothing changed");
        }
        final Map<String, InetSocketAddress> after = addresses(before);
        after.put(id, parsed);
        return change(actor, before, after, reason);
    }

    /** Removes a member; completes with the new list. */
    public CompletableFuture<MemberList> remove(final String actor, final String id, final String reason)
    {
        requireCluster();
        final Map<String, String> before = replication.members();
        if (!before.containsKey(id))
        {
            throw new Refused(404, id + " is not a member (members: " + before.keySet() + "); nothing changed");
        }
        if (before.size() == 1)
        {
            throw new Refused(400, id + " is the only member; a cluster needs at least one; nothing changed");
        }
        final Map<String, InetSocketAddress> after = addresses(before);
        after.remove(id);
        return change(actor, before, after, reason);
    }

    private CompletableFuture<MemberList> change(final String actor, final Map<String, String> before,
        final Map<String, InetSocketAddress> after, final String reason)
    {
        if (!replication.isLeader())
        {
            return CompletableFuture.failedFuture(new NotLeaderException(replication.node().nodeId(), replication.leaderId()));
        }
        final MembersChange.Builder record = MembersChange.newBuilder().setReason(reason == null ? "" : reason);
        before.forEach((id, address) -> record.addBefore(Member.newBuilder().setId(id).setAddress(address)));
        after.forEach((id, address) -> record.addAfter(Member.newBuilder().setId(id)
            .setAddress(address.getHostString() + ":" + address.getPort())));
        return control.submit(PolicyState.command(actor, System.currentTimeMillis()).setMembers(record).build())
            .thenCompose(outcome ->
            {
                if (outcome.status() != PolicyState.Status.OK)
                {
                    throw new Refused(400, outcome.error().getError());
                }
                return groups.changeMembers(after);
            })
            .thenApply(done -> list());
    }

    private InetSocketAddress parseAddress(final String id, final String address)
    {
        if (address == null || address.isBlank())
        {
            throw new Refused(400, "the new member's data-plane address is required ({\"address\":\"HOST:PORT\"}); nothing changed");
        }
        final InetSocketAddress parsed;
        try
        {
            parsed = RaftNodeConfig.parsePeers(id + "=" + address.strip()).get(id);
        }
        catch (final IllegalArgumentException e)
        {
            throw new Refused(400, "address '" + address + "' is not HOST:PORT; nothing changed");
        }
        if (parsed.getPort() < 1 || parsed.getPort() + raftPortOffset > 65535)
        {
            throw new Refused(400, "address '" + address + "': the port must be 1 to " + (65535 - raftPortOffset) +
                " (its Raft port is the data port + " + raftPortOffset + "); nothing changed");
        }
        return parsed;
    }

    private static Map<String, InetSocketAddress> addresses(final Map<String, String> members)
    {
        final Map<String, InetSocketAddress> parsed = new LinkedHashMap<>();
        members.forEach((id, address) -> parsed.putAll(RaftNodeConfig.parsePeers(id + "=" + address)));
        return parsed;
    }

    private void requireCluster()
    {
        if (replication == null)
        {
            throw new Refused(400, "this node is not a member of a cluster (start it with --node-id and --peers); it has no members to change");
        }
    }
}
