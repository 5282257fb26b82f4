package dev.limiter.cli;

import dev.limiter.protocol.policy.Member;
import dev.limiter.protocol.policy.MemberList;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Map;
import java.util.StringJoiner;

/**
 * {@code ./limiter cluster add|remove|members}: changes or lists the members of a running cluster
 * through the leader's authenticated admin API ({@code /v1/members}); the data port never changes
 * membership.
 */
@Command(
    name = "members",
    mixinStandardHelpOptions = true,
    description = {
        "Adds or removes a member of a running cluster, or lists the members, through the nodes' admin HTTP API.",
        "  ./limiter cluster add     --node-id ID --address HOST:PORT [--reason R]",
        "  ./limiter cluster remove  --node-id ID [--reason R]",
        "  ./limiter cluster members",
        "Start a new member first: ./limiter server --join --node-id ID --peers <every member, it included>.",
        "It catches up from the log or a snapshot. The change goes to the leader (a follower passes it to the next",
        "--admin address) and is recorded in the audit log (./limiter audit) with who made it and why.",
        "The admin token comes from --token, $LIMITER_ADMIN_TOKEN, data/admin-token or data/node/admin-token.",
        "Exit status: 0 done, 1 the API refused or no node answered, 2 bad input (nothing was sent)."},
    sortOptions = false)
public final class MembersCommand extends AdminCommand
{
    private static final String PREFIX = "limiter cluster: ";

    @Parameters(index = "0", paramLabel = "add|remove|members", description = "What to do.")
    String action;

    @Option(names = "--node-id", paramLabel = "ID", description = "The member to add or remove.")
    String nodeId;

    @Option(names = "--address", paramLabel = "HOST:PORT", description = "The new member's data-plane address (add only).")
    String address;

    @Option(names = "--reason", paramLabel = "R", description = "Why (the audit log keeps it).")
    String reason;

    @Mixin
    AdminClient.Options admin;

    private MembersCommand(final AdminClient.Io io)
    {
        super(io);
    }

    @Override
    public Integer call() throws AdminClient.Failure
    {
        final MemberList members;
        switch (action)
        {
            case "add" ->
            {
                final String id = AdminClient.required(nodeId, "--node-id is required: the new member's id");
                final String at = AdminClient.required(address, "--address HOST:PORT is required (the new member's data-plane address)");
                members = admin.connect(io).call("PUT", path(id), Member.newBuilder().setId(id).setAddress(at).build(),
                    MemberList.getDefaultInstance());
            }
            case "remove" ->
            {
                if (address != null)
                {
                    throw AdminClient.usage("--address is for add only");
                }
                final String id = AdminClient.required(nodeId, "--node-id is required: the member to remove");
                members = admin.connect(io).call("DELETE", path(id), null, MemberList.getDefaultInstance());
            }
            case "members" -> members = admin.connect(io).call("GET", "/v1/members", null, MemberList.getDefaultInstance());
            default -> throw AdminClient.usage("unknown action '" + action + "' (add, remove or members)");
        }
        final PrintStream out = io.out();
        if (admin.json)
        {
            out.println(Output.json(members));
            return 0;
        }
        final StringJoiner list = new StringJoiner(",");
        members.getMembersList().forEach(m -> list.add(m.getId() + "=" + m.getAddress()));
        out.println("members now: " + list + (members.getLeader().isEmpty() ? " (no leader right now)" : " (leader " + members.getLeader() + ")"));
        return 0;
    }

    private String path(final String id) throws AdminClient.Failure
    {
        return "/v1/members/" + AdminClient.encode(id) +
            (reason == null ? "" : "?reason=" + AdminClient.encode(AdminClient.reason(reason)));
    }

    /**
     * Runs {@code ./limiter cluster add|remove|members} with these arguments.
     *
     * @return the exit status: 0 done, 1 the API refused or no node answered, 2 bad input
     */
    public static int run(final String[] args, final PrintStream out, final PrintStream err, final Map<String, String> env,
                          final Path workDir)
    {
        return AdminCommand.run(MembersCommand::new, PREFIX, args, out, err, env, workDir);
    }

    public static void main(final String[] args)
    {
        exit(MembersCommand::run, args);
    }
}
