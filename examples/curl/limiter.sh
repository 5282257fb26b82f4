#!/usr/bin/env bash
# limiter.v1.RateLimiter over HTTP/JSON with curl (docs/api.md): decisions until a 429 (with its
# RateLimit and Retry-After headers), then a lease of a concurrency limit given back with DELETE.
#
#   ./limiter api --servers 127.0.0.1:7401,127.0.0.1:7402,127.0.0.1:7403 --token-file api-tokens &
#   LIMITER_TOKEN="$(head -1 api-tokens)" examples/curl/limiter.sh
#
# Environment: LIMITER_HTTP (default http://127.0.0.1:8092), LIMITER_TOKEN (required),
# TENANT (acme), ROUTE (/v1/orders/1), LEASE_ROUTE (empty: no lease shown), MAX_CALLS (100).
set -euo pipefail
base=${LIMITER_HTTP:-http://127.0.0.1:8092}
: "${LIMITER_TOKEN:?set LIMITER_TOKEN to a bearer token of the --token-file of the gateway}"
tenant=${TENANT:-acme}
route=${ROUTE:-/v1/orders/1}
lease_route=${LEASE_ROUTE:-}
auth="Authorization: Bearer $LIMITER_TOKEN"
json="Content-Type: application/json"

for _ in $(seq "${MAX_CALLS:-100}"); do
  # -i: the status line and headers (RateLimit-Policy, RateLimit, Retry-After), then the JSON body.
  answer=$(curl -sS -i -H "$auth" -H "$json" \
    -d "{\"tenant\":\"$tenant\",\"route\":\"$route\"}" "$base/v1/acquire" | tr -d '\r')
  echo "$answer" | grep -iE '^(HTTP/|ratelimit|retry-after)'
  echo "$answer" | tail -n 1
  if echo "$answer" | head -n 1 | grep -q ' 429'; then break; fi
done

# A bad field: 400 naming it, nothing charged.
curl -sS -H "$auth" -H "$json" -d "{\"tenant\":\"$tenant\",\"route\":\"$route\",\"cost\":-1}" -w ' %{http_code}\n' "$base/v1/acquire"

if [ -n "$lease_route" ]; then
  lease=$(curl -sS -H "$auth" -H "$json" -d "{\"tenant\":\"$tenant\",\"route\":\"$lease_route\"}" -w ' %{http_code}' "$base/v1/leases")
  echo "lease: $lease"
  id=$(echo "$lease" | sed -n 's/.*"lease_id":"\([^"]*\)".*/\1/p')
  echo "second lease: $(curl -sS -H "$auth" -H "$json" -d "{\"tenant\":\"$tenant\",\"route\":\"$lease_route\"}" -w ' %{http_code}' "$base/v1/leases")"
  curl -sS -H "$auth" -X DELETE -w 'release: %{http_code}\n' "$base/v1/leases/$id"
fi
