package dev.limiter.bench;

import dev.limiter.cli.AcquireCommand;
import dev.limiter.cli.AppealCommand;
import dev.limiter.cli.AuditCommand;
import dev.limiter.cli.DecisionsCommand;
import dev.limiter.cli.DrillCommand;
import dev.limiter.cli.ExemptCommand;
import dev.limiter.cli.HotKeysCommand;
import dev.limiter.cli.MembersCommand;
import dev.limiter.cli.PolicyCommand;
import dev.limiter.cli.ReleaseCommand;
import dev.limiter.cli.StatusCommand;
import dev.limiter.cli.pilot.PilotCommand;
import dev.limiter.envoy.RlsBench;
import dev.limiter.envoy.RlsMain;
import dev.limiter.envoy.api.ApiBench;
import dev.limiter.envoy.api.ApiMain;
import dev.limiter.server.ServerMain;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.lang.reflect.AnnotatedElement;
import java.lang.reflect.Array;
import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.IllegalFormatException;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every {@code ./limiter} command's {@code --help} renders as written: picocli passes each help line
 * through {@link String#format}, so a bare {@code %} ("5% of") makes it print a warning and the raw text.
 */
class CommandHelpTest
{
    private static final List<Class<?>> COMMANDS = List.of(
        LoadGenerator.class, ServerMain.class, StatusCommand.class, AcquireCommand.class, ReleaseCommand.class,
        PolicyCommand.class, AuditCommand.class, DrillCommand.class, HotKeysCommand.class, ExemptCommand.class,
        MembersCommand.class, PilotCommand.class, RlsMain.class, RlsBench.class, ApiMain.class, ApiBench.class,
        DecisionsCommand.class, AppealCommand.class);

    @Test
    void everyHelpLineOfEveryCommandIsAValidFormatString()
    {
        final List<String> broken = new ArrayList<>();
        final List<String> checked = new ArrayList<>();
        for (final Class<?> command : COMMANDS)
        {
            collect(new CommandLine(command, CommandHelpTest::instantiate).getCommandSpec(), checked, broken);
        }
        assertTrue(checked.size() > 200, "the annotations were read: " + checked.size() + " help lines");
        assertEquals(List.of(), broken, "help lines picocli cannot format (write a literal % as %%)");
    }

    /** Only the help is read, so the admin commands, whose constructors take their I/O, get nulls. */
    private static <K> K instantiate(final Class<K> type) throws Exception
    {
        final Constructor<?> constructor = type.getDeclaredConstructors()[0];
        constructor.setAccessible(true);
        final Object[] args = new Object[constructor.getParameterCount()];
        final Class<?>[] types = constructor.getParameterTypes();
        for (int i = 0; i < args.length; i++)
        {
            args[i] = types[i].isPrimitive() ? Array.get(Array.newInstance(types[i], 1), 0) : null;
        }
        return type.cast(constructor.newInstance(args));
    }

    /** The help text as written in the annotations: picocli formats it only when it renders (and warns then). */
    private static void collect(final CommandSpec spec, final List<String> checked, final List<String> broken)
    {
        final List<String> lines = new ArrayList<>();
        for (Class<?> type = spec.userObject().getClass(); type != null && type != Object.class; type = type.getSuperclass())
        {
            final Command command = type.getAnnotation(Command.class);
            if (command != null)
            {
                lines.addAll(List.of(command.description()));
                lines.addAll(List.of(command.header()));
                lines.addAll(List.of(command.footer()));
            }
            final List<AnnotatedElement> members = new ArrayList<>(List.of(type.getDeclaredFields()));
            members.addAll(List.of(type.getDeclaredMethods()));
            for (final AnnotatedElement member : members)
            {
                Optional.ofNullable(member.getAnnotation(Option.class)).ifPresent(option -> lines.addAll(List.of(option.description())));
                Optional.ofNullable(member.getAnnotation(Parameters.class)).ifPresent(parameters -> lines.addAll(List.of(parameters.description())));
            }
        }
        checked.addAll(lines);
        for (final String line : lines)
        {
            try
            {
                String.format(line);
            }
            catch (final IllegalFormatException e)
            {
                broken.add(spec.qualifiedName() + ": " + e + " in: " + line);
            }
        }
        spec.subcommands().values().forEach(sub -> collect(sub.getCommandSpec(), checked, broken));
    }
}
