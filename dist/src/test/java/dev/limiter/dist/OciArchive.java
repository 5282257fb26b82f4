package dev.limiter.dist;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * An OCI image archive (an image layout in a tar, as Jib's buildTar writes it with format OCI) read the way a
 * container runtime reads it: index.json, its one manifest, the config and the layers, every blob checked against
 * its digest, the gzip layers unpacked in order into one root filesystem with their whiteouts applied.
 * The tars are read with GNU tar, which refuses absolute and {@code ..} member names.
 */
final class OciArchive
{
    private static final String LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip";
    private static final String WHITEOUT = ".wh.";
    private static final String OPAQUE = ".wh..wh..opq";

    private final Path layout;
    private final JsonObject index;
    private final JsonObject manifest;
    private final JsonObject config;

    private OciArchive(final Path layout) throws IOException
    {
        this.layout = layout;
        final JsonElement layoutVersion = json(layout.resolve("oci-layout")).get("imageLayoutVersion");
        if (layoutVersion == null || !"1.0.0".equals(layoutVersion.getAsString()))
        {
            throw new IOException("not an OCI image layout 1.0.0: oci-layout says " + layoutVersion);
        }
        this.index = json(layout.resolve("index.json"));
        final JsonArray manifests = index.getAsJsonArray("manifests");
        if (manifests == null || manifests.size() != 1)
        {
            throw new IOException("index.json should list one manifest: " + index);
        }
        this.manifest = JsonParser.parseString(blobText(manifests.get(0).getAsJsonObject())).getAsJsonObject();
        this.config = JsonParser.parseString(blobText(manifest.getAsJsonObject("config"))).getAsJsonObject();
    }

    /** Unpacks the archive (the layout only, not its layers) into {@code into}. */
    static OciArchive open(final Path archive, final Path into) throws IOException, InterruptedException
    {
        Files.createDirectories(into);
        tar(List.of("-xf", archive.toString(), "-C", into.toString()));
        return new OciArchive(into);
    }

    /** The name the archive gives its image ({@code org.opencontainers.image.ref.name} of index.json). */
    String referenceName()
    {
        return index.getAsJsonArray("manifests").get(0).getAsJsonObject().getAsJsonObject("annotations")
            .get("org.opencontainers.image.ref.name").getAsString();
    }

    /** The image's run settings: the config's {@code config} object (Entrypoint, Cmd, Env, User, ...). */
    JsonObject runConfig()
    {
        return config.getAsJsonObject("config");
    }

    String architecture()
    {
        return config.get("os").getAsString() + "/" + config.get("architecture").getAsString();
    }

    /** The layers' compressed sizes in bytes, in order. */
    List<Long> layerSizes()
    {
        final List<Long> sizes = new ArrayList<>();
        manifest.getAsJsonArray("layers").forEach(l -> sizes.add(l.getAsJsonObject().get("size").getAsLong()));
        return sizes;
    }

    /**
     * The layers unpacked in order into {@code root}: before a layer is laid on, its whiteouts remove what the
     * layers below put at their names ({@code .wh.NAME}) or in their directory ({@code .wh..wh..opq}).
     */
    void unpackLayers(final Path root) throws IOException, InterruptedException
    {
        Files.createDirectories(root);
        final JsonArray diffIds = config.getAsJsonObject("rootfs").getAsJsonArray("diff_ids");
        final JsonArray layers = manifest.getAsJsonArray("layers");
        if (diffIds.size() != layers.size())
        {
            throw new IOException(layers.size() + " layers but " + diffIds.size() + " diff_ids in the config");
        }
        for (final JsonElement element : layers)
        {
            final JsonObject layer = element.getAsJsonObject();
            final String type = layer.get("mediaType").getAsString();
            if (!LAYER_TYPE.equals(type))
            {
                throw new IOException("a layer of media type " + type + ", not " + LAYER_TYPE);
            }
            final Path blob = verifiedBlob(layer);
            for (final String entry : tar(List.of("-tzf", blob.toString(),
                "--warning=no-unknown-keyword")).lines().toList())
            {
                applyWhiteout(root, entry);
            }
            tar(List.of("-xzpf", blob.toString(), "-C", root.toString(), "--warning=no-unknown-keyword",
                "--exclude=" + WHITEOUT + "*"));
        }
    }

    private static void applyWhiteout(final Path root, final String entry) throws IOException
    {
        final Path name = Path.of(entry).normalize();
        final String base = name.getFileName() == null ? "" : name.getFileName().toString();
        if (!base.startsWith(WHITEOUT))
        {
            return;
        }
        final Path parent = name.getParent() == null ? root : root.resolve(name.getParent().toString());
        if (!parent.normalize().startsWith(root))
        {
            throw new IOException("a whiteout outside the root: " + entry);
        }
        if (OPAQUE.equals(base))
        {
            if (Files.isDirectory(parent))
            {
                try (Stream<Path> children = Files.list(parent))
                {
                    for (final Path child : children.toList())
                    {
                        deleteTree(child);
                    }
                }
            }
        }
        else
        {
            deleteTree(parent.resolve(base.substring(WHITEOUT.length())));
        }
    }

    /** Deletes a file or a directory tree, following no symbolic links. */
    static void deleteTree(final Path path) throws IOException
    {
        if (!Files.exists(path, java.nio.file.LinkOption.NOFOLLOW_LINKS))
        {
            return;
        }
        try (Stream<Path> all = Files.walk(path))
        {
            for (final Path p : all.sorted(Comparator.reverseOrder()).toList())
            {
                Files.delete(p);
            }
        }
    }

    private Path verifiedBlob(final JsonObject descriptor) throws IOException
    {
        final String digest = descriptor.get("digest").getAsString();
        if (!digest.matches("sha256:[0-9a-f]{64}"))
        {
            throw new IOException("not a sha256 digest: " + digest);
        }
        final Path blob = layout.resolve("blobs").resolve("sha256").resolve(digest.substring("sha256:".length()));
        final MessageDigest sha256;
        try
        {
            sha256 = MessageDigest.getInstance("SHA-256");
        }
        catch (final NoSuchAlgorithmException e)
        {
            throw new IllegalStateException(e);
        }
        long size = 0;
        try (InputStream in = new DigestInputStream(Files.newInputStream(blob), sha256))
        {
            final byte[] buffer = new byte[1 << 16];
            for (int n; (n = in.read(buffer)) > 0; )
            {
                size += n;
            }
        }
        final String actual = "sha256:" + HexFormat.of().formatHex(sha256.digest());
        if (!actual.equals(digest) || size != descriptor.get("size").getAsLong())
        {
            throw new IOException("blob " + digest + " (" + descriptor.get("size") + " bytes) holds " + actual
                + " (" + size + " bytes)");
        }
        return blob;
    }

    private String blobText(final JsonObject descriptor) throws IOException
    {
        return Files.readString(verifiedBlob(descriptor), StandardCharsets.UTF_8);
    }

    private static JsonObject json(final Path file) throws IOException
    {
        return JsonParser.parseString(Files.readString(file, StandardCharsets.UTF_8)).getAsJsonObject();
    }

    /** The image's environment (Env, NAME=value each) as a map. */
    Map<String, String> environment()
    {
        final Map<String, String> env = new LinkedHashMap<>();
        final JsonArray list = runConfig().getAsJsonArray("Env");
        if (list != null)
        {
            for (final JsonElement e : list)
            {
                final String pair = e.getAsString();
                final int eq = pair.indexOf('=');
                env.put(pair.substring(0, eq), pair.substring(eq + 1));
            }
        }
        return env;
    }

    private static String tar(final List<String> arguments) throws IOException, InterruptedException
    {
        final List<String> command = new ArrayList<>();
        command.add("tar");
        command.addAll(arguments);
        final Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        final String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(60, TimeUnit.SECONDS))
        {
            process.destroyForcibly();
            throw new IOException(String.join(" ", command) + " took over 60 s");
        }
        if (process.exitValue() != 0)
        {
            throw new IOException(String.join(" ", command) + " failed: " + output);
        }
        return output;
    }
}
