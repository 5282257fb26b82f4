package dev.limiter.server.engine;

import dev.limiter.protocol.IpAddresses;
import dev.limiter.protocol.policy.HotKey;
import dev.limiter.protocol.policy.HotKeyReport;
import dev.limiter.protocol.policy.Policy;
import dev.limiter.protocol.policy.Scope;
import dev.limiter.protocol.policy.ShardHotKeys;
import dev.limiter.server.control.PolicyState;
import dev.limiter.server.table.BucketKeys;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/** Turns the shards' hot-key reports into what people read: policy, scope and the key's own text. */
public final class HotKeyReports
{
    private HotKeyReports()
    {
    }

    public static HotKeyReport of(final List<Shard> shards, final PolicyState policies)
    {
        final HotKeyReport.Builder out = HotKeyReport.newBuilder().setSampleEvery(HotKeys.SAMPLE_EVERY);
        for (final Shard shard : shards)
        {
            final HotKeys.Report report = shard.hotKeys();
            final ShardHotKeys.Builder one = out.addShardsBuilder().setShard(shard.id())
                .setWindowSeconds(report.windowNanos() / 1e9).setSampled(report.sampled());
            for (final HotKeys.Entry entry : report.top())
            {
                one.addTop(describe(entry, policies));
            }
        }
        return out.build();
    }

    /** A bucket key is u16 policy ordinal | u32 policy version | scope part (see FrameRouter). */
    static HotKey describe(final HotKeys.Entry entry, final PolicyState policies)
    {
        final byte[] key = entry.key();
        final HotKey.Builder out = HotKey.newBuilder().setShare(entry.share()).setOverestimate(entry.overestimate())
            .setTokensPerSecond(entry.tokensPerSecond());
        if (key.length < BucketKeys.PREFIX_LENGTH)
        {
            return out.setPolicyId("?").setKey(hex(key)).build();
        }
        final ByteBuffer prefix = ByteBuffer.wrap(key);
        final int ordinal = Short.toUnsignedInt(prefix.getShort());
        // A bucket of one of the policy's extra limits carries the limit's index above the version.
        final long version = BucketKeys.policyVersion(Integer.toUnsignedLong(prefix.getInt()));
        final Policy policy = policies.policyAt(ordinal, version);
        out.setPolicyVersion(version).setPolicyId(policy == null ? "ordinal " + ordinal : policy.getId());
        final byte[] part = Arrays.copyOfRange(key, BucketKeys.PREFIX_LENGTH, key.length);
        final Scope scope = policy == null ? Scope.SCOPE_UNSPECIFIED :
            policy.getScope() == Scope.SCOPE_UNSPECIFIED ? Scope.TENANT : policy.getScope();
        out.setScope(scope);
        final String text = switch (scope)
        {
            case GLOBAL -> "";
            case CLIENT_IP -> ip(part);
            case PRINCIPAL -> principal(part);
            case TENANT, SCOPE_UNSPECIFIED -> new String(part, StandardCharsets.UTF_8);
            default -> hex(part);
        };
        return out.setKey(entry.truncated() ? text + "..." : text).build();
    }

    private static String principal(final byte[] part)
    {
        if (part.length == 0)
        {
            return "";
        }
        final int tenantLength = Math.min(Byte.toUnsignedInt(part[0]), part.length - 1);
        return new String(part, 1, tenantLength, StandardCharsets.UTF_8) + "/" +
            new String(part, 1 + tenantLength, part.length - 1 - tenantLength, StandardCharsets.UTF_8);
    }

    private static String ip(final byte[] part)
    {
        if (part.length != IpAddresses.LENGTH)
        {
            return hex(part);
        }
        try
        {
            return InetAddress.getByAddress(part).getHostAddress(); // an IPv4-mapped address prints as IPv4
        }
        catch (final UnknownHostException e)
        {
            return hex(part);
        }
    }

    private static String hex(final byte[] bytes)
    {
        final StringBuilder out = new StringBuilder(bytes.length * 2);
        for (final byte b : bytes)
        {
            out.append(Character.forDigit((b >> 4) & 0xF, 16)).append(Character.forDigit(b & 0xF, 16));
        }
        return out.toString();
    }
}
