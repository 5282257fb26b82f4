package dev.limiter.envoy.api;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonNull;
import com.google.gson.JsonPrimitive;
import com.google.gson.Strictness;
import com.google.gson.stream.JsonReader;
import com.google.gson.stream.JsonToken;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;

import java.io.IOException;
import java.io.StringReader;
import java.math.BigDecimal;
import java.util.Map;

/**
 * HTTP bodies in protobuf's canonical JSON, read strictly: a body that is not one JSON object, a
 * name given twice, a field the message does not have, or a value of the wrong type is refused with INVALID_ARGUMENT
 * naming the field ({@code tenant}, {@code items[2].cost}). Protobuf's parser finds the
 * fault; when its message does not name the field, each field is parsed alone to find it.
 */
final class JsonBodies
{
    private static final JsonFormat.Parser PARSER = JsonFormat.parser();
    private static final JsonFormat.Printer PRINTER = JsonFormat.printer().preservingProtoFieldNames()
        .omittingInsignificantWhitespace();

    private JsonBodies()
    {
    }

    /**
     * {@code body} read into a new message of {@code prototype}'s type.
     *
     * @throws ApiProblem INVALID_ARGUMENT naming the field at fault ("body" when it is not JSON)
     */
    @SuppressWarnings("unchecked")
    static <M extends Message> M parse(final String body, final M prototype)
    {
        final JsonElement tree;
        try
        {
            final JsonReader reader = new JsonReader(new StringReader(body));
            reader.setStrictness(Strictness.STRICT);
            tree = read(reader, "");
            if (reader.peek() != JsonToken.END_DOCUMENT)
            {
                throw new JsonParseException("more than one JSON value");
            }
        }
        catch (final ApiProblem e)
        {
            throw e;
        }
        catch (final JsonParseException | IOException | IllegalStateException | NumberFormatException e)
        {
            throw ApiProblem.invalid("body", "not a JSON object: " + rootCause(e));
        }
        if (!tree.isJsonObject())
        {
            throw ApiProblem.invalid("body", "not a JSON object");
        }
        final Message.Builder builder = prototype.newBuilderForType();
        try
        {
            PARSER.merge(body, builder);
        }
        catch (final InvalidProtocolBufferException | RuntimeException e)
        {
            final String field = locate(tree.getAsJsonObject(), prototype, "");
            throw ApiProblem.invalid(field.isEmpty() ? "body" : field, rootCause(e));
        }
        return (M)builder.build();
    }

    /**
     * One JSON value as a tree, refusing a name given twice in one object: readers disagree on which
     * one counts (the first, the last), and a request must mean one thing to every reader.
     */
    private static JsonElement read(final JsonReader reader, final String path) throws IOException
    {
        switch (reader.peek())
        {
            case BEGIN_OBJECT ->
            {
                final JsonObject object = new JsonObject();
                reader.beginObject();
                while (reader.hasNext())
                {
                    final String name = reader.nextName();
                    if (object.has(name))
                    {
                        throw ApiProblem.invalid(path + name, "given twice");
                    }
                    object.add(name, read(reader, path + name + "."));
                }
                reader.endObject();
                return object;
            }
            case BEGIN_ARRAY ->
            {
                final JsonArray array = new JsonArray();
                reader.beginArray();
                final String base = path.isEmpty() ? "" : path.substring(0, path.length() - 1);
                while (reader.hasNext())
                {
                    array.add(read(reader, base + "[" + array.size() + "]."));
                }
                reader.endArray();
                return array;
            }
            case STRING ->
            {
                return new JsonPrimitive(reader.nextString());
            }
            case NUMBER ->
            {
                return new JsonPrimitive(new BigDecimal(reader.nextString()));
            }
            case BOOLEAN ->
            {
                return new JsonPrimitive(reader.nextBoolean());
            }
            case NULL ->
            {
                reader.nextNull();
                return JsonNull.INSTANCE;
            }
            default -> throw new JsonParseException("unexpected " + reader.peek() + " at " + reader.getPath());
        }
    }

    /**
     * The path of the first field of {@code object} that does not parse as {@code type}'s; empty when none alone fails.
     */
    private static String locate(final JsonObject object, final Message type, final String prefix)
    {
        for (final Map.Entry<String, JsonElement> member : object.entrySet())
        {
            final String name = member.getKey();
            final FieldDescriptor field = find(type, name);
            if (field == null)
            {
                return prefix + name;
            }
            final JsonObject alone = new JsonObject();
            alone.add(name, member.getValue());
            try
            {
                PARSER.merge(alone.toString(), type.newBuilderForType());
                continue;
            }
            catch (final InvalidProtocolBufferException | RuntimeException e)
            {
                // This field is at fault: look inside it when it is a message.
            }
            final String path = prefix + field.getName();
            if (field.getJavaType() == FieldDescriptor.JavaType.MESSAGE
                && !field.getMessageType().getFullName().startsWith("google.protobuf."))
            {
                final Message inner = type.newBuilderForType().newBuilderForField(field).getDefaultInstanceForType();
                if (field.isRepeated() && member.getValue().isJsonArray())
                {
                    final JsonArray items = member.getValue().getAsJsonArray();
                    for (int i = 0; i < items.size(); i++)
                    {
                        if (items.get(i).isJsonObject())
                        {
                            final String within = locate(items.get(i).getAsJsonObject(), inner, path + "[" + i + "].");
                            if (!within.isEmpty())
                            {
                                return within;
                            }
                        }
                        else if (!items.get(i).isJsonNull())
                        {
                            return path + "[" + i + "]";
                        }
                    }
                }
                else if (!field.isRepeated() && member.getValue().isJsonObject())
                {
                    final String within = locate(member.getValue().getAsJsonObject(), inner, path + ".");
                    if (!within.isEmpty())
                    {
                        return within;
                    }
                }
            }
            return path;
        }
        return "";
    }

    private static FieldDescriptor find(final Message type, final String jsonName)
    {
        for (final FieldDescriptor field : type.getDescriptorForType().getFields())
        {
            if (field.getName().equals(jsonName) || field.getJsonName().equals(jsonName))
            {
                return field;
            }
        }
        return null;
    }

    private static String rootCause(final Throwable e)
    {
        Throwable cause = e;
        while (cause.getCause() != null && cause.getCause() != cause)
        {
            cause = cause.getCause();
        }
        return String.valueOf(cause.getMessage());
    }

    /** {@code message} as one line of canonical JSON, field names as the .proto spells them. */
    static String print(final Message message)
    {
        try
        {
            return PRINTER.print(message);
        }
        catch (final InvalidProtocolBufferException e)
        {
            throw new IllegalStateException("the API's messages have no Any field", e);
        }
    }
}
