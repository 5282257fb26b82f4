package dev.limiter.bench;

import dev.limiter.protocol.BlockingRequest;
import dev.limiter.protocol.ErrorCode;
import dev.limiter.protocol.MessageType;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** {@code ./limiter cluster add|remove}: changes the members of a running cluster. */
@Command(
    name = "members",
    mixinStandardHelpOptions = true,
    description = {
        "Adds or removes a member of a running cluster (through its leader).",
        "  ./limiter cluster add    --server HOST:PORT --node-id ID --address HOST:PORT",
        "  ./limiter cluster remove --server HOST:PORT --node-id ID",
        "Start a new member first: ./limiter server --join --node-id ID --peers <every member, it included>.",
        "It catches up from the log or a snapshot. Exit status 0 when the change is committed, 1 otherwise."},
    sortOptions = false)
public final class MembersCommand implements Callable<Integer>
{
    @Parameters(index = "0", paramLabel = "add|remove", description = "What to do.")
    String action;

    @Option(names = "--server", paramLabel = "HOST:PORT", description = "Any member (default: ${DEFAULT-VALUE}).")
    String server = "127.0.0.1:7401";

    @Option(names = "--node-id", required = true, description = "The member to add or remove.")
    String nodeId;

    @Option(names = "--address", paramLabel = "HOST:PORT", description = "The new member's data-plane address (add only).")
    String address;

    private static final Pattern MEMBER = Pattern.compile("\\{\"id\":\"([^\"]*)\",\"address\":\"([^\"]*)\"}");

    @Override
    public Integer call()
    {
        if (!action.equals("add") && !action.equals("remove"))
        {
            System.err.println("limiter cluster: unknown action '" + action + "' (add or remove)");
            return 2;
        }
        if (action.equals("add") && address == null)
        {
            System.err.println("limiter cluster add: --address HOST:PORT is required (the new member's data-plane address)");
            return 2;
        }
        try
        {
            final String status = BlockingRequest.send(server, MessageType.STATUS, new byte[0], 5000).text();
            final Map<String, String> members = new LinkedHashMap<>();
            final Matcher m = MEMBER.matcher(status.substring(status.indexOf("\"members\":")));
            while (m.find())
            {
                members.put(m.group(1), m.group(2));
            }
            if (action.equals("add"))
            {
                if (members.containsKey(nodeId))
                {
                    System.err.println("limiter cluster add: " + nodeId + " is already a member " + members);
                    return 1;
                }
                members.put(nodeId, address);
            }
            else if (members.remove(nodeId) == null)
            {
                System.err.println("limiter cluster remove: " + nodeId + " is not a member " + members);
                return 1;
            }
            final StringBuilder list = new StringBuilder();
            members.forEach((id, a) -> list.append(list.length() == 0 ? "" : ",").append(id).append('=').append(a));
            String target = server;
            for (int hop = 0; hop < 3; hop++)
            {
                final BlockingRequest.Answer answer = BlockingRequest.send(target, MessageType.MEMBERS,
                    list.toString().getBytes(StandardCharsets.UTF_8), 30_000);
                if (answer.type() == MessageType.MEMBERS_RESULT)
                {
                    System.out.println("members now: " + answer.text());
                    return 0;
                }
                final String message = answer.isError() ? answer.errorMessage() : "unexpected answer " + MessageType.name(answer.type());
                if (answer.errorCode() == ErrorCode.NOT_LEADER && !message.isEmpty())
                {
                    target = message; // ask the leader
                    continue;
                }
                System.err.println("limiter cluster " + action + ": " + answer.errorCode() + ": " +
                    (message.isEmpty() ? "no leader right now; try again" : message));
                return 1;
            }
            System.err.println("limiter cluster " + action + ": could not reach the leader");
            return 1;
        }
        catch (final IOException | RuntimeException e)
        {
            System.err.println("limiter cluster " + action + ": " + e.getMessage());
            return 1;
        }
    }

    public static void main(final String[] args)
    {
        System.exit(new CommandLine(new MembersCommand()).execute(args));
    }
}
