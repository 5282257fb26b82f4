package dev.limiter.server.cluster;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.limiter.protocol.policy.PolicyCommand;

import java.nio.ByteBuffer;

/**
 * The one owner of the POLICY log entry: a control-plane change, applied by every replica to its
 * policy state in log order (the reply is the encoded {@code PolicyState.Outcome}).
 *
 * <pre>
 * u8 3 | PolicyCommand (protobuf)
 * </pre>
 */
public final class PolicyEntry
{
    /** First byte of the entry. */
    public static final byte TYPE = 3;

    private PolicyEntry()
    {
    }

    /** The entry's bytes (position 0, limit its length). */
    public static ByteBuffer encode(final PolicyCommand command)
    {
        final byte[] body = command.toByteArray();
        return ByteBuffer.allocate(1 + body.length).put(TYPE).put(body).flip();
    }

    /**
     * Reads the command from {@code entry}'s position (not moved).
     *
     * @throws IllegalArgumentException when it is not a POLICY entry or its command does not parse
     */
    public static PolicyCommand decode(final ByteBuffer entry)
    {
        if (!entry.hasRemaining() || entry.get(entry.position()) != TYPE)
        {
            throw new IllegalArgumentException("not a POLICY entry");
        }
        try
        {
            return PolicyCommand.parseFrom(entry.duplicate().position(entry.position() + 1));
        }
        catch (final InvalidProtocolBufferException e)
        {
            throw new IllegalArgumentException("POLICY entry holds no valid PolicyCommand: " + e.getMessage(), e);
        }
    }
}
