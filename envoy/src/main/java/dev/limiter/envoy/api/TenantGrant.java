package dev.limiter.envoy.api;

import java.util.LinkedHashSet;
import java.util.Set;

/**
 * The tenants one credential may ask decisions for: any (a token on a line of its own, or a client
 * certificate), or the tenants its line of the token file names. A request item for another tenant
 * is refused PERMISSION_DENIED before the store is asked, so nothing is charged for it.
 */
final class TenantGrant
{
    /** Every tenant. */
    static final TenantGrant ANY = new TenantGrant(null);

    /** Longest tenant, in bytes, as the descriptor's rules allow. */
    private static final int MAX_TENANT_BYTES = 64;

    private final Set<String> tenants;

    private TenantGrant(final Set<String> tenants)
    {
        this.tenants = tenants;
    }

    /**
     * The tenants of a comma-separated list ({@code acme,globex}).
     *
     * @param where names the list in an error ("--token-file F line 3")
     * @throws IllegalArgumentException naming the tenant at fault and what to do
     */
    static TenantGrant parse(final String list, final String where)
    {
        final Set<String> tenants = new LinkedHashSet<>();
        for (final String tenant : list.split(",", -1))
        {
            if (tenant.isEmpty())
            {
                throw new IllegalArgumentException(where + ": an empty tenant in '" + list + "' (tenants are "
                    + "separated by single commas, no spaces)");
            }
            if (tenant.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > MAX_TENANT_BYTES
                || !tenant.codePoints().allMatch(c -> c > 0x20 && c != 0x7f && !(c >= 0x80 && c <= 0x9f)))
            {
                throw new IllegalArgumentException(where + ": tenant '" + tenant + "' cannot be granted (at most "
                    + MAX_TENANT_BYTES + " bytes, printable, no spaces)");
            }
            tenants.add(tenant);
        }
        return new TenantGrant(Set.copyOf(tenants));
    }

    /** Whether this credential may ask for {@code tenant} (as normalised by the descriptor's rules). */
    boolean allows(final String tenant)
    {
        return tenants == null || tenants.contains(tenant);
    }

    /** The refusal of a request for {@code tenant}, which {@link #allows} refused. */
    ApiProblem refusal(final String tenant)
    {
        return new ApiProblem(io.grpc.Status.Code.PERMISSION_DENIED, "tenant", "tenant: this token may not ask "
            + "for tenant '" + tenant + "' (its line of the gateway's --token-file names the tenants it may)");
    }
}
