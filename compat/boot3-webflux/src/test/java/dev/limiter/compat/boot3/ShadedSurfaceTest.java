package dev.limiter.compat.boot3;

import dev.limiter.client.LimiterClient;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Type;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What {@code limiter-client} shows an application: its public classes (dev.limiter.client) and what
 * their public and protected members name. No unrelocated Netty, protobuf or gson type may appear (the
 * host's versions would be bound), and the relocated ones appear only where they are known to.
 */
class ShadedSurfaceTest
{
    /**
     * The members that name relocated types, listed in docs/spring.md: the host's own event loops
     * (for the project's gateways, on the unshaded client-sdk), the policy set's protobuf message,
     * and an outage's FailureMode (a protobuf enum: dev.limiter.shaded.protocol.policy.FailureMode
     * in this artifact).
     */
    private static final Set<String> KNOWN_RELOCATED = Set.of(
        "dev.limiter.client.LimiterClient$Builder.eventLoops",
        "dev.limiter.client.LimiterClient$OutageListener.outage",
        "dev.limiter.client.PolicyCache$Snapshot.policies",
        "dev.limiter.client.PolicyCache$Snapshot.<init>");

    @Test
    void thePublicSurfaceNamesNoUnrelocatedDependencyAndOnlyTheKnownRelocatedOnes() throws Exception
    {
        final List<String> classes = clientClasses();
        assertTrue(classes.size() > 20, "found only " + classes + " in the limiter-client jar");
        final Set<String> unrelocated = new TreeSet<>();
        final Set<String> relocated = new TreeSet<>();
        for (final String name : classes)
        {
            final Class<?> type = Class.forName(name, false, getClass().getClassLoader());
            if (!Modifier.isPublic(type.getModifiers()))
            {
                continue;
            }
            final List<String> uses = new ArrayList<>();
            if (type.getGenericSuperclass() != null)
            {
                uses.add(type.getName() + "=" + type.getGenericSuperclass().getTypeName());
            }
            for (final Type face : type.getGenericInterfaces())
            {
                uses.add(type.getName() + "=" + face.getTypeName());
            }
            for (final Method method : type.getDeclaredMethods())
            {
                if (visible(method.getModifiers()) && !method.isSynthetic())
                {
                    uses.add(type.getName() + "." + method.getName() + "=" + method.toGenericString());
                }
            }
            for (final Executable constructor : type.getDeclaredConstructors())
            {
                if (visible(constructor.getModifiers()))
                {
                    uses.add(type.getName() + ".<init>=" + constructor.toGenericString());
                }
            }
            for (final Field field : type.getDeclaredFields())
            {
                if (visible(field.getModifiers()))
                {
                    uses.add(type.getName() + "." + field.getName() + "=" + field.toGenericString());
                }
            }
            for (final String use : uses)
            {
                final String member = use.substring(0, use.indexOf('='));
                final String signature = use.substring(use.indexOf('=') + 1);
                if (signature.matches(".*(?<![.\\w])(io\\.netty|com\\.google)\\..*"))
                {
                    unrelocated.add(use);
                }
                if (signature.contains("dev.limiter.shaded."))
                {
                    relocated.add(member);
                }
            }
        }
        assertEquals(Collections.emptySet(), unrelocated, "public members naming the host's own Netty/protobuf/gson");
        assertEquals(new TreeSet<>(KNOWN_RELOCATED), relocated, "public members naming relocated types");
    }

    private static boolean visible(final int modifiers)
    {
        return Modifier.isPublic(modifiers) || Modifier.isProtected(modifiers);
    }

    private static List<String> clientClasses() throws IOException, URISyntaxException
    {
        final Path jar = Path.of(LimiterClient.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        assertTrue(jar.getFileName().toString().startsWith("limiter-client-"), "LimiterClient came from " + jar);
        final List<String> names = new ArrayList<>();
        try (JarFile file = new JarFile(jar.toFile()))
        {
            for (final JarEntry entry : Collections.list(file.entries()))
            {
                final String path = entry.getName();
                if (path.startsWith("dev/limiter/client/") && path.endsWith(".class"))
                {
                    names.add(path.substring(0, path.length() - ".class".length()).replace('/', '.'));
                }
            }
        }
        return names;
    }
}
