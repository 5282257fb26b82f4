package dev.limiter.server.control;

import com.google.protobuf.Timestamp;
import dev.limiter.protocol.policy.Mode;
import dev.limiter.protocol.policy.PolicyVersion;

import java.util.List;

/**
 * Which version of a policy is in force at a time: pure functions of its history (every replica
 * computes the same from the same log).
 */
final class PolicyVersions
{
    private PolicyVersions()
    {
    }

    /** When a version takes effect (epoch milliseconds): its effectiveFrom, or always. */
    static long effectiveFromMillis(final PolicyVersion version)
    {
        return version.getPolicy().hasEffectiveFrom() ? millis(version.getPolicy().getEffectiveFrom()) : Long.MIN_VALUE;
    }

    static boolean isShadow(final PolicyVersion version)
    {
        return version.getPolicy().getMode() == Mode.SHADOW;
    }

    /** Whether a version counts at {@code nowMillis}: its effective time has come and it was not blocked. */
    static boolean effective(final PolicyVersion version, final long nowMillis)
    {
        return !version.getBlocked() && effectiveFromMillis(version) <= nowMillis;
    }

    /** The version enforced at {@code nowMillis}: the newest effective ENFORCE version after the last deletion, or null. */
    static PolicyVersion enforced(final List<PolicyVersion> versions, final long nowMillis)
    {
        for (int i = versions.size() - 1; i >= 0; i--)
        {
            final PolicyVersion version = versions.get(i);
            if (!effective(version, nowMillis))
            {
                continue;
            }
            if (version.getDeleted())
            {
                return null;
            }
            if (!isShadow(version))
            {
                return version;
            }
        }
        return null;
    }

    /** The version shadowed beside it: the newest effective version, when it is a SHADOW one; else null. */
    static PolicyVersion shadowed(final List<PolicyVersion> versions, final long nowMillis)
    {
        for (int i = versions.size() - 1; i >= 0; i--)
        {
            final PolicyVersion version = versions.get(i);
            if (effective(version, nowMillis))
            {
                return !version.getDeleted() && isShadow(version) ? version : null;
            }
        }
        return null;
    }

    /**
     * Whether the policy is in force now or will be once its scheduled versions have taken effect:
     * its newest version that was not blocked is no deletion (as put, rollback and delete judge it).
     */
    static boolean inForce(final List<PolicyVersion> versions)
    {
        return enforced(versions, Long.MAX_VALUE - 1) != null || shadowed(versions, Long.MAX_VALUE - 1) != null;
    }

    /** Epoch milliseconds of a protobuf timestamp (whole milliseconds, as the log's times are taken). */
    static long millis(final Timestamp t)
    {
        return t.getSeconds() * 1000 + t.getNanos() / 1_000_000;
    }
}
