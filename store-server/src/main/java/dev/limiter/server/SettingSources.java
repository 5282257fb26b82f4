package dev.limiter.server;

import picocli.CommandLine;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * Where a node's settings come from besides its flags: {@code LIMITER_*} environment variables and
 * a settings file ({@code --config FILE} or {@code $LIMITER_CONFIG}, Java properties). Each server
 * option {@code --some-option} is the variable {@code LIMITER_SOME_OPTION} and the file's key
 * {@code some-option}. A flag wins over the environment, the environment over the file, the file
 * over the built-in default; a variable set to blanks counts as unset. Values from every source go
 * through the same conversion and the same checks as flags ({@link ServerMain}); an error about a
 * value that did not come from a flag is followed by where it came from ({@link #explain}).
 */
final class SettingSources implements CommandLine.IDefaultValueProvider
{
    static final String ENV_PREFIX = "LIMITER_";
    static final String CONFIG_OPTION = "--config";
    static final String CONFIG_ENV = "LIMITER_CONFIG";

    private final Map<String, String> env;
    private final Path file;
    private final Properties fileValues;
    /** Option name to where its value came from, for the options a variable or the file set. */
    private final Map<String, String> origins = new LinkedHashMap<>();

    private SettingSources(final Map<String, String> env, final Path file, final Properties fileValues)
    {
        this.env = Map.copyOf(env);
        this.file = file;
        this.fileValues = fileValues;
    }

    /**
     * The sources for one start: the file named by {@code --config} in {@code args}, else by
     * {@code $LIMITER_CONFIG}, else none.
     *
     * @throws IllegalArgumentException naming the file when it cannot be read
     */
    static SettingSources of(final String[] args, final Map<String, String> env)
    {
        Path file = null;
        for (int i = 0; i < args.length; i++)
        {
            if (args[i].equals(CONFIG_OPTION) && i + 1 < args.length)
            {
                file = Path.of(args[i + 1]);
            }
            else if (args[i].startsWith(CONFIG_OPTION + "="))
            {
                file = Path.of(args[i].substring(CONFIG_OPTION.length() + 1));
            }
        }
        String fileOrigin = CONFIG_OPTION;
        if (file == null && env.get(CONFIG_ENV) != null && !env.get(CONFIG_ENV).isBlank())
        {
            file = Path.of(env.get(CONFIG_ENV));
            fileOrigin = "$" + CONFIG_ENV;
        }
        final Properties values = new Properties();
        if (file != null)
        {
            try (Reader in = Files.newBufferedReader(file, StandardCharsets.UTF_8))
            {
                values.load(in);
            }
            catch (final IOException | IllegalArgumentException e)
            {
                throw new IllegalArgumentException(fileOrigin + " " + file
                    + ": cannot read it as a settings file (" + e
                    + "); it holds lines of key=value, the keys being the server's options without '--', "
                    + "e.g. shards=4");
            }
        }
        return new SettingSources(env, file, values);
    }

    /**
     * Refuses keys of the file that name no option of {@code spec}.
     *
     * @return the {@code LIMITER_*} variables that name no option either (a misspelt one is otherwise
     *         ignored without a word), {@code LIMITER_JAVA_OPTS} and {@code LIMITER_CONFIG} aside
     * @throws IllegalArgumentException naming each unknown key of the file
     */
    Set<String> checkNames(final CommandSpec spec)
    {
        final Set<String> keys = new TreeSet<>();
        for (final OptionSpec option : spec.options())
        {
            keys.add(key(option));
        }
        final Set<String> unknown = new TreeSet<>();
        for (final String key : fileValues.stringPropertyNames())
        {
            if (!keys.contains(key) || key.equals(key(CONFIG_OPTION)))
            {
                unknown.add(key);
            }
        }
        if (!unknown.isEmpty())
        {
            throw new IllegalArgumentException("settings file " + file + ": unknown key(s) " + unknown
                + "; the keys are the "
                + "server's options without '--' (./limiter server --help), e.g. shards, peers, data-dir");
        }
        final Set<String> variables = new TreeSet<>();
        keys.forEach(key -> variables.add(variable("--" + key)));
        final Set<String> unknownVariables = new TreeSet<>();
        for (final String name : env.keySet())
        {
            if (name.startsWith(ENV_PREFIX) && !variables.contains(name) && !name.equals(CONFIG_ENV) &&
                !name.equals("LIMITER_JAVA_OPTS"))
            {
                unknownVariables.add(name);
            }
        }
        return unknownVariables;
    }

    @Override
    public String defaultValue(final ArgSpec arg)
    {
        if (!(arg instanceof OptionSpec option) || option.usageHelp() || option.versionHelp() ||
            option.longestName().equals(CONFIG_OPTION))
        {
            return null;
        }
        final String variable = variable(option.longestName());
        if (env.get(variable) != null && !env.get(variable).isBlank()) // set but blank reads as unset, as before
        {
            origins.put(option.longestName(), "environment variable " + variable);
            return env.get(variable);
        }
        final String key = key(option);
        if (fileValues.containsKey(key))
        {
            origins.put(option.longestName(), "settings file " + file + ", key " + key);
            return fileValues.getProperty(key).trim();
        }
        return null;
    }

    /**
     * {@code message} (an error naming options), followed by where each named option's value came
     * from when that was not a flag.
     */
    String explain(final String message)
    {
        final StringBuilder explained = new StringBuilder(message);
        origins.forEach((option, origin) ->
        {
            if (Pattern.compile(Pattern.quote(option) + "(?![\\w-])").matcher(message).find())
            {
                explained.append(" [").append(option).append(" was set by ").append(origin).append(']');
            }
        });
        return explained.toString();
    }

    /** The environment variable of {@code --some-option}: {@code LIMITER_SOME_OPTION}. */
    static String variable(final String option)
    {
        return ENV_PREFIX + option.substring(2).toUpperCase(Locale.ROOT).replace('-', '_');
    }

    private static String key(final OptionSpec option)
    {
        return key(option.longestName());
    }

    private static String key(final String option)
    {
        return option.substring(2);
    }
}
