package dev.limiter.cli.pilot;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The pilot's replayed traffic and what it is played against (config/pilot-trace.json): the route,
 * the tenants with their request rates over the trace (a fraction 0..1 of its length per segment),
 * which tenants are well behaved (their rejections are false-rejection candidates), the policy under
 * test, the tenants it is enabled for first, the sample backend's capacity and the latency targets.
 * Each phase plays the whole trace compressed to the phase's length: the segments keep their share
 * of the time and their rates (requests a second), so a shorter phase sends fewer requests at the
 * same load.
 */
public record Trace(String route, List<Tenant> tenants, PolicyUnderTest policy, List<String> firstTenants,
                    SampleBackend.Settings backend, double backendP99TargetMillis, double decisionP99TargetMillis)
{
    /** The most requests a second one segment may ask for (the player is one thread on a shared machine). */
    static final double MAX_RATE = 5_000;

    /** One tenant's traffic. */
    public record Tenant(String id, boolean wellBehaved, List<Segment> segments)
    {
    }

    /** {@code rate} requests a second from {@code from} to {@code to}, fractions of the trace's length. */
    public record Segment(double from, double to, double rate)
    {
    }

    /** The new policy: one token-bucket limit per tenant on the trace's route. */
    public record PolicyUnderTest(String id, long rate, long burst, String owner)
    {
    }

    /**
     * The requests of one phase of {@code phaseNanos}, in the order they are due: {@code dueNanos[i]}
     * from the phase's start, for tenant {@code tenant[i]} (an index into {@link #tenants}).
     */
    public record Schedule(long[] dueNanos, int[] tenant)
    {
        public int size()
        {
            return dueNanos.length;
        }
    }

    /** Reads and checks a trace file; the message of the exception names the file and what is wrong. */
    public static Trace read(final Path file) throws IOException
    {
        final String text = Files.readString(file, StandardCharsets.UTF_8);
        try
        {
            return parse(JsonParser.parseString(text).getAsJsonObject());
        }
        catch (final JsonParseException | IllegalStateException | IllegalArgumentException |
                     UnsupportedOperationException e)
        {
            throw new IllegalArgumentException(file + ": " + e.getMessage(), e);
        }
    }

    static Trace parse(final JsonObject json)
    {
        final String route = text(json, "route");
        if (!route.startsWith("/"))
        {
            throw new IllegalArgumentException("route must start with /, was '" + route + "'");
        }
        final List<Tenant> tenants = new ArrayList<>();
        final Set<String> ids = new HashSet<>();
        for (final JsonElement element : array(json, "tenants"))
        {
            final JsonObject tenant = element.getAsJsonObject();
            final String id = text(tenant, "id");
            if (!ids.add(id))
            {
                throw new IllegalArgumentException("tenant '" + id + "' is listed twice");
            }
            final List<Segment> segments = new ArrayList<>();
            for (final JsonElement s : array(tenant, "segments"))
            {
                final JsonObject segment = s.getAsJsonObject();
                final double from = number(segment, "from");
                final double to = number(segment, "to");
                final double rate = number(segment, "rate");
                if (from < 0 || to > 1 || from >= to || rate <= 0 || rate > MAX_RATE)
                {
                    throw new IllegalArgumentException("tenant '" + id
                        + "': a segment needs 0 <= from < to <= 1 and 0 < rate <= " + (long)MAX_RATE
                        + ", was from " + from + " to " + to + " rate " + rate);
                }
                segments.add(new Segment(from, to, rate));
            }
            tenants.add(new Tenant(id, tenant.has("wellBehaved") && tenant.get("wellBehaved").getAsBoolean(),
                List.copyOf(segments)));
        }
        if (tenants.isEmpty())
        {
            throw new IllegalArgumentException("tenants is empty: the trace needs at least one tenant");
        }
        final JsonObject policy = json.getAsJsonObject("policy");
        if (policy == null)
        {
            throw new IllegalArgumentException("policy is missing");
        }
        final PolicyUnderTest underTest = new PolicyUnderTest(text(policy, "id"), (long)number(policy, "rate"),
            (long)number(policy, "burst"), text(policy, "owner"));
        if (underTest.rate() < 1 || underTest.burst() < 1)
        {
            throw new IllegalArgumentException("policy rate and burst must be at least 1");
        }
        final List<String> first = new ArrayList<>();
        for (final JsonElement element : array(json, "firstTenants"))
        {
            if (!ids.contains(element.getAsString()))
            {
                throw new IllegalArgumentException("firstTenants names '" + element.getAsString()
                    + "', which is not a tenant of the trace");
            }
            first.add(element.getAsString());
        }
        final JsonObject backend = json.getAsJsonObject("backend");
        if (backend == null)
        {
            throw new IllegalArgumentException("backend is missing");
        }
        final SampleBackend.Settings settings = new SampleBackend.Settings((int)number(backend, "workers"),
            (int)number(backend, "serviceMillis"), (int)number(backend, "maxQueue"), (int)number(backend,
                "maxWaitMillis"));
        final JsonObject targets = json.getAsJsonObject("targets");
        if (targets == null)
        {
            throw new IllegalArgumentException("targets is missing");
        }
        return new Trace(route, List.copyOf(tenants), underTest, List.copyOf(first), settings,
            number(targets, "backendP99Millis"), number(targets, "decisionP99Millis"));
    }

    /** Whether {@code tenant} is marked well behaved. */
    public boolean wellBehaved(final String tenant)
    {
        return tenants.stream().anyMatch(t -> t.id().equals(tenant) && t.wellBehaved());
    }

    /**
     * Every request of a phase of {@code phaseNanos}: each segment's requests evenly spaced at its
     * rate, each tenant's offset by a fraction of its interval so that tenants do not all call at
     * the same instant. The same inputs give the same schedule.
     */
    public Schedule schedule(final long phaseNanos)
    {
        if (phaseNanos <= 0)
        {
            throw new IllegalArgumentException("a phase must last more than 0 ns, was " + phaseNanos);
        }
        final List<long[]> all = new ArrayList<>();
        for (int t = 0; t < tenants.size(); t++)
        {
            for (final Segment segment : tenants.get(t).segments())
            {
                final long start = (long)(segment.from() * phaseNanos);
                final long end = (long)(segment.to() * phaseNanos);
                final double interval = 1e9 / segment.rate();
                final double offset = interval * (t + 1) / (tenants.size() + 1);
                for (long k = 0; ; k++)
                {
                    final long due = start + (long)(offset + k * interval);
                    if (due >= end)
                    {
                        break;
                    }
                    all.add(new long[] {due, t});
                }
            }
        }
        final long[][] sorted = all.toArray(long[][]::new);
        Arrays.sort(sorted, (a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0]) : Long.compare(a[1], b[1]));
        final long[] due = new long[sorted.length];
        final int[] tenant = new int[sorted.length];
        for (int i = 0; i < sorted.length; i++)
        {
            due[i] = sorted[i][0];
            tenant[i] = (int)sorted[i][1];
        }
        return new Schedule(due, tenant);
    }

    private static String text(final JsonObject json, final String name)
    {
        final JsonElement value = json.get(name);
        if (value == null || !value.isJsonPrimitive() || value.getAsString().isBlank())
        {
            throw new IllegalArgumentException(name + " is missing or empty");
        }
        return value.getAsString().strip();
    }

    private static double number(final JsonObject json, final String name)
    {
        final JsonElement value = json.get(name);
        if (value == null || !value.isJsonPrimitive() || !value.getAsJsonPrimitive().isNumber())
        {
            throw new IllegalArgumentException(name + " is missing or not a number");
        }
        return value.getAsDouble();
    }

    private static JsonArray array(final JsonObject json, final String name)
    {
        final JsonElement value = json.get(name);
        if (value == null || !value.isJsonArray())
        {
            throw new IllegalArgumentException(name + " is missing or not a list");
        }
        return value.getAsJsonArray();
    }
}
