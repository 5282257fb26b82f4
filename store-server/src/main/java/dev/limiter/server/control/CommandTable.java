package dev.limiter.server.control;

import dev.limiter.protocol.policy.PolicyCommand;
import dev.limiter.server.control.PolicyState.Outcome;

import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * Which owner applies each type of control command: one handler per {@link PolicyCommand.ChangeCase},
 * registered for the class that holds the state the command changes (the policy commands go to
 * {@link PolicyCommands}, which reads them against the {@link PolicyCatalogue}). The handler also
 * writes the entry's reply. A command of a type nobody registered (an empty command, or one from a
 * newer version) is refused and changes nothing.
 */
final class CommandTable
{
    /** Applies one command to the state its owner holds and says what it did (the entry's reply). */
    @FunctionalInterface
    interface Handler
    {
        Outcome apply(PolicyCommand command);
    }

    /** Whom an applied command concerns once it has changed something. */
    enum Audience
    {
        /** A change of the policy set or the exemptions: republished to SDKs, the data plane recompiles. */
        POLICY_SET,
        /** A move of this region's shares: read by the region exchange and the shards only. */
        REGION_SHARES
    }

    private record Route(Handler handler, Audience audience)
    {
    }

    private final Map<PolicyCommand.ChangeCase, Route> routes = new EnumMap<>(PolicyCommand.ChangeCase.class);

    /**
     * @throws IllegalArgumentException when {@code type} is the empty case or already has an owner
     */
    CommandTable on(final PolicyCommand.ChangeCase type, final Audience audience, final Handler handler)
    {
        if (type == PolicyCommand.ChangeCase.CHANGE_NOT_SET)
        {
            throw new IllegalArgumentException("an empty command has no owner: it is always refused");
        }
        if (routes.putIfAbsent(type, new Route(handler, audience)) != null)
        {
            throw new IllegalArgumentException(type + " already has an owner: one command type, one owner");
        }
        return this;
    }

    /** The owner's reply, or a refusal when no owner applies this type. */
    Outcome apply(final PolicyCommand command)
    {
        final Route route = routes.get(command.getChangeCase());
        return route == null ? Outcome.invalid("empty policy command", List.of()) : route.handler().apply(command);
    }

    /** Whom a command of this type concerns; {@link Audience#POLICY_SET} when it has no owner. */
    Audience audience(final PolicyCommand.ChangeCase type)
    {
        final Route route = routes.get(type);
        return route == null ? Audience.POLICY_SET : route.audience();
    }

    /** Whether a command of this type has an owner. */
    boolean handles(final PolicyCommand.ChangeCase type)
    {
        return routes.containsKey(type);
    }
}
