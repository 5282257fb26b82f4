package dev.limiter.cli.pilot;

import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import dev.limiter.cli.DrillCommand;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The seed's drills, run one at a time through {@code ./limiter drill NAME --json} (so one drill
 * that cannot run does not stop the others), each kept with its verdict and evidence, or with the
 * reason it did not run.
 */
final class PilotDrills
{
    /** The drills in the order they run: rollback, hot tenant, spike, then the two that stop nodes. */
    static final List<String> NAMES = List.of("rollback", "hot-tenant", "spike", "leader-kill", "store-failure");

    /** One drill's outcome: PASS, FAIL, or NOT_RUN with the reason. */
    record Outcome(String drill, String verdict, JsonObject evidence, String reason)
    {
    }

    private PilotDrills()
    {
    }

    /** Runs every drill against the cluster, each traffic phase {@code seconds} long. */
    static List<Outcome> run(final List<String> servers, final List<String> admins, final int seconds,
        final Map<String, String> env,
                             final Path workDir, final PrintStream progress)
    {
        final List<Outcome> outcomes = new ArrayList<>();
        for (final String name : NAMES)
        {
            progress.println("limiter pilot: drill " + name + "...");
            final ByteArrayOutputStream out = new ByteArrayOutputStream();
            final ByteArrayOutputStream err = new ByteArrayOutputStream();
            final int status = DrillCommand.run(new String[] {name, "--server", String.join(",", servers), "--admin",
                String.join(",", admins), "--seconds", String.valueOf(seconds), "--json"},
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true,
                    StandardCharsets.UTF_8), env, workDir);
            final Outcome outcome = outcome(name, status, out.toString(StandardCharsets.UTF_8),
                err.toString(StandardCharsets.UTF_8));
            progress.println("limiter pilot: drill " + name + ": " + outcome.verdict() +
                (outcome.reason().isEmpty() ? "" : " (" + outcome.reason() + ")"));
            outcomes.add(outcome);
        }
        return outcomes;
    }

    /** The drill's JSON line when it printed one, else NOT_RUN with what it said on stderr. */
    static Outcome outcome(final String name, final int status, final String out, final String err)
    {
        for (final String line : out.split("\n"))
        {
            if (line.startsWith("{"))
            {
                try
                {
                    final JsonObject json = JsonParser.parseString(line).getAsJsonObject();
                    if (name.equals(json.get("drill").getAsString()))
                    {
                        return new Outcome(name, json.get("verdict").getAsString(), json.getAsJsonObject("evidence"),
                            "");
                    }
                }
                catch (final JsonParseException | IllegalStateException | NullPointerException e)
                {
                    // not the drill's verdict line
                }
            }
        }
        final String said = err.strip().replace('\n', ' ');
        return new Outcome(name, "NOT_RUN", new JsonObject(), "the drill did not run (exit " + status + "): " +
            (said.isEmpty() ? "it printed no reason" : said));
    }
}
