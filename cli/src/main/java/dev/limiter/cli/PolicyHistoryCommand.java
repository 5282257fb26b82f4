package dev.limiter.cli;

import com.google.protobuf.util.Timestamps;
import dev.limiter.protocol.policy.Mode;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.PolicyHistory;
import dev.limiter.protocol.policy.PolicyVersion;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code policy history ID}: every version of one policy. */
@Command(
    name = "history",
    mixinStandardHelpOptions = true,
    description = {"Lists every version of one policy: who made it, when and why.",
        "Oldest first; NOTE marks rollbacks, deletions, the version enforced (current) and one in shadow. --json prints the PolicyHistory."},
    sortOptions = false)
final class PolicyHistoryCommand implements Callable<Integer>
{
    @ParentCommand
    PolicyCommand parent;

    @Parameters(index = "0", paramLabel = "ID", description = "The policy's id.")
    String id;

    @Mixin
    AdminClient.Options admin;

    @Override
    public Integer call() throws AdminClient.Failure
    {
        final String policyId = PolicyCommand.id(id);
        final PolicyHistory history = admin.connect(parent.io)
            .call("GET", PolicyCommand.path(policyId) + "/history", null, PolicyHistory.getDefaultInstance());
        final PrintStream out = parent.io.out();
        if (admin.json)
        {
            out.println(Output.json(history));
            return 0;
        }
        final List<List<String>> rows = new ArrayList<>();
        final int count = history.getVersionsCount();
        // Enforced: the newest ENFORCE version after the last deletion; a newest SHADOW version runs beside it.
        // Scheduled versions count once their time has passed (by this machine's clock); blocked ones never.
        final long now = System.currentTimeMillis();
        int enforced = -1;
        for (int i = count - 1; i >= 0; i--)
        {
            final PolicyVersion candidate = history.getVersions(i);
            if (candidate.getBlocked() || (candidate.getPolicy().hasEffectiveFrom() &&
                Timestamps.toMillis(candidate.getPolicy().getEffectiveFrom()) > now))
            {
                continue;
            }
            if (candidate.getDeleted())
            {
                break;
            }
            if (candidate.getPolicy().getMode() != Mode.SHADOW)
            {
                enforced = i;
                break;
            }
        }
        for (int i = 0; i < count; i++)
        {
            final PolicyVersion version = history.getVersions(i);
            final Policy policy = version.getPolicy();
            final List<String> notes = new ArrayList<>();
            if (version.getRolledBackFrom() != 0)
            {
                notes.add("rollback of v" + Output.number(version.getRolledBackFrom()));
            }
            if (policy.hasEffectiveFrom())
            {
                notes.add("from " + Output.time(true, policy.getEffectiveFrom()));
            }
            if (version.getBlocked())
            {
                notes.add("blocked");
            }
            if (version.getDeleted())
            {
                notes.add("deleted");
            }
            else if (i == enforced)
            {
                notes.add("current");
            }
            else if (i == count - 1 && policy.getMode() == Mode.SHADOW)
            {
                notes.add("shadow");
            }
            rows.add(List.of(Output.number(policy.getVersion()), Output.time(version.hasCreatedAt(), version.getCreatedAt()),
                version.getActor(), policy.getOwner(), version.getDeleted() ? "-" : Output.rate(policy),
                version.getDeleted() ? "-" : Output.burst(policy), String.join(", ", notes), policy.getReason()));
        }
        Output.table(out, List.of("VERSION", "CREATED", "ACTOR", "OWNER", "RATE", "BURST", "NOTE", "REASON"), rows);
        return 0;
    }
}
