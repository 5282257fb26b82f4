#!/usr/bin/env bash
# The Spring Cloud Gateway benchmark (README.md here): the same gateway with no limiter, with
# RedisRateLimiter (a local redis-server) and with LimiterRateLimiter (a local ./limiter cluster),
# in rounds that alternate the three, open loop at RATE req/s and closed loop with CONNECTIONS
# connections. Prints one JSON line per run, then the tables (results in OUT).
#
#   benchmarks/gateway/run.sh                      # 3 rounds, 1,000 req/s and 32 connections, 20 s each
#   RATE=250 SATURATION=0 benchmarks/gateway/run.sh      # open loop at 250 req/s only
#   VARIANT=refuse ROUNDS=1 benchmarks/gateway/run.sh   # tenant-0 gets half the load, over its 100/s
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/benchmarks/gateway"
ROUNDS="${ROUNDS:-3}"
GATEWAY_WARMUP="${GATEWAY_WARMUP:-40}" # seconds of closed-loop load on each fresh gateway JVM, not measured
WARMUP="${WARMUP:-10}"           # seconds at the same load before each measured window
DURATION="${DURATION:-20}"       # measured seconds
RATE="${RATE:-1000}"             # open loop, requests per second
CONNECTIONS="${CONNECTIONS:-32}" # closed loop (saturation)
SATURATION="${SATURATION:-1}"    # 0: the open loop only
TENANTS="${TENANTS:-100}"
VARIANT="${VARIANT:-open}"       # open: nothing refused; refuse: 100/s per tenant, tenant-0 sent HOT_SHARE %
HOT_SHARE="${HOT_SHARE:-50}"
REDIS_PORT="${REDIS_PORT:-16379}"
GATEWAY_PORT="${GATEWAY_PORT:-18080}"
UPSTREAM_PORT="${UPSTREAM_PORT:-18081}"
CONFIGS="${CONFIGS:-none redis limiter}"
JAVA_OPTS="${JAVA_OPTS:--Xms512m -Xmx512m}"
OUT="${OUT:-$HERE/target/results-$(date -u +%Y%m%dT%H%M%SZ)}"

case "$VARIANT" in
  open) RATE_LIMIT=1000000; LOAD_HOT=0; POLICY="$HERE/policies/bench-open.json" ;;
  refuse) RATE_LIMIT=100; LOAD_HOT="$HOT_SHARE"; POLICY="$HERE/policies/bench-refuse.json" ;;
  *) echo "run.sh: VARIANT must be open or refuse, was $VARIANT" >&2; exit 2 ;;
esac
command -v redis-server >/dev/null || { echo "run.sh: needs redis-server (apt-get install redis-server)" >&2; exit 1; }
mkdir -p "$OUT"

if [ -z "${SKIP_BUILD:-}" ]; then
  # One build of everything ./limiter cluster and the harness run from (the shared lock where there is one).
  LOCK=(); [ -e /tmp/limiter-mvn.lock ] && LOCK=(flock /tmp/limiter-mvn.lock)
  (cd "$ROOT" && "${LOCK[@]}" mvn -B -q -o -DskipTests package -pl benchmarks/gateway,benchmarks,cli,store-server,envoy -am)
fi
CP="$HERE/target/classes:$(cat "$HERE/target/runtime.classpath")"

PIDS=()
GATEWAY_PID=""
stop() {
  [ -n "$GATEWAY_PID" ] && kill "$GATEWAY_PID" 2>/dev/null && wait "$GATEWAY_PID" 2>/dev/null || true
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap stop EXIT
trap 'exit 130' INT TERM

wait_http() { # URL SECONDS: until anything answers
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    curl -s -o /dev/null -m 1 -H 'X-Tenant: probe' "$1" && return 0
    sleep 0.1
  done
  echo "run.sh: nothing answered at $1 within $2 s" >&2; return 1
}

redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no >"$OUT/redis.log" 2>&1 &
REDIS_PID=$!
PIDS+=($REDIS_PID)
java $JAVA_OPTS -cp "$CP" dev.limiter.bench.gateway.Upstream "$UPSTREAM_PORT" >"$OUT/upstream.log" 2>&1 &
PIDS+=($!)
(cd "$ROOT" && exec ./limiter cluster --no-rls --no-api) >"$OUT/cluster.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$UPSTREAM_PORT/" 30
for i in $(seq 60); do
  (cd "$ROOT" && ./limiter policy put --file "$POLICY" --admin 127.0.0.1:7481,127.0.0.1:7482,127.0.0.1:7483) \
    >"$OUT/policy.log" 2>&1 && break
  grep -q 'already says exactly this' "$OUT/policy.log" && break # in force from an earlier run
  [ "$i" = 60 ] && { echo "run.sh: the cluster took no policy in 60 s:" >&2; cat "$OUT/policy.log" >&2; exit 1; }
  sleep 1
done
cat "$OUT/policy.log"
redis-cli -p "$REDIS_PORT" ping >/dev/null
{ echo "redis: $(redis-server --version)"; java -version 2>&1 | head -1; nproc; } >"$OUT/versions.txt"

run_gateway() { # CONFIG ROUND
  java $JAVA_OPTS -cp "$CP" dev.limiter.bench.gateway.BenchGatewayApplication \
    --spring.profiles.active="$1" --bench.port="$GATEWAY_PORT" --bench.upstream="http://127.0.0.1:$UPSTREAM_PORT" \
    --bench.redis-port="$REDIS_PORT" --bench.rate="$RATE_LIMIT" --bench.burst="$RATE_LIMIT" \
    >"$OUT/gateway-$1-$2.log" 2>&1 &
  GATEWAY_PID=$!
  wait_http "http://127.0.0.1:$GATEWAY_PORT/bench/probe" 60
}

TICKS="$(getconf CLK_TCK)"
cpu_ms() { # PID...: the CPU time (user + system) of these processes so far, in ms (0 for one gone)
  local total=0 p t
  for p in "$@"; do
    t=$(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)
    total=$((total + t))
  done
  echo $((total * 1000 / TICKS))
}

load() { # CONFIG ROUND ARGS...
  local config="$1" round="$2"; shift 2
  local nodes before_gw before_redis before_nodes
  nodes=$(cat "$ROOT"/data/n1/node.pid "$ROOT"/data/n2/node.pid "$ROOT"/data/n3/node.pid 2>/dev/null || true)
  before_gw=$(cpu_ms "$GATEWAY_PID"); before_redis=$(cpu_ms "$REDIS_PID"); before_nodes=$(cpu_ms $nodes)
  # What else the machine was doing as the run started (the busiest processes).
  { echo "== $config round $round $* $(date -u +%T) $(uptime)"; top -b -n1 -o %CPU | sed -n '8,13p' | cut -c1-120
    ps -eo pid=,args= | awk 'NR>0' | grep -E ' (mvn|jlink|java .*(surefire|plexus))' | cut -c1-160 | head -5; } >>"$OUT/machine.log"
  java -Xms256m -Xmx256m -cp "$CP" dev.limiter.bench.gateway.LoadDriver --target \
    "http://127.0.0.1:$GATEWAY_PORT/bench/item" --config "$config" --round "$round" --warmup "$WARMUP" \
    --duration "$DURATION" --tenants "$TENANTS" --hot-share "$LOAD_HOT" --uptime "$(uptime)" "$@" \
    | tee -a "$OUT/results.jsonl"
  # CPU over the whole run (warm-up and measured window), by process: what a request costs each.
  echo "{\"config\":\"$config\",\"round\":$round,\"load\":\"$*\",\"gatewayCpuMs\":$(($(cpu_ms "$GATEWAY_PID") - before_gw)),\"redisCpuMs\":$(($(cpu_ms "$REDIS_PID") - before_redis)),\"nodesCpuMs\":$(($(cpu_ms $nodes) - before_nodes))}" >>"$OUT/cpu.jsonl"
}

set -- $CONFIGS
for ((round = 1; round <= ROUNDS; round++)); do
  # Each round starts with the next configuration, so that none always runs first or last.
  order=("$@")
  for ((k = 0; k < (round - 1) % $#; k++)); do order=("${order[@]:1}" "${order[0]}"); done
  for config in "${order[@]}"; do
    run_gateway "$config" "$round"
    # A fresh gateway JVM on this machine answers a few hundred requests a second for its first seconds
    # (measured: 270 to 1,060/s in its first 15 s, 6,000/s and more after a minute; with the limiter,
    # whose SDK has more code to compile, the least): a 1,000/s open loop then measures the backlog of
    # its warm-up for seconds. A closed loop at full speed compiles it first.
    if [ "$GATEWAY_WARMUP" -gt 0 ]; then
      java -Xms256m -Xmx256m -cp "$CP" dev.limiter.bench.gateway.LoadDriver --target \
        "http://127.0.0.1:$GATEWAY_PORT/bench/item" --config "$config" --round "$round" --warmup 0 \
        --duration "$GATEWAY_WARMUP" --tenants "$TENANTS" --connections "$CONNECTIONS" >>"$OUT/gateway-warmup.jsonl"
    fi
    load "$config" "$round" --rate "$RATE"
    if [ "$VARIANT" = open ] && [ "$SATURATION" = 1 ]; then load "$config" "$round" --connections "$CONNECTIONS"; fi
    kill "$GATEWAY_PID"; wait "$GATEWAY_PID" 2>/dev/null || true; GATEWAY_PID=""
  done
done
java -cp "$CP" dev.limiter.bench.gateway.Summary "$OUT/results.jsonl" | tee "$OUT/summary.md"
echo "results in $OUT"
