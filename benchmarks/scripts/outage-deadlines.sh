#!/usr/bin/env bash
# The whole-cluster outage drill of docs/performance.md ("Deadlines through a whole-cluster outage"):
# per run, a fresh local cluster (LIMITER_CLUSTER_ARGS, default --no-rls), then
#   ./limiter bench --server <the three nodes> --connections 8 --deadline-ms 50 --duration 16 --warmup 2
# with every node killed by SIGKILL 8 s into it and ./limiter cluster started again 3 s later; one
# line per run with the bench's maxUs, maxNodeUs, maxSdkUs, errors and degraded, then its per-second
# lines. Bounded: RUNS runs (default 5) of about 45 s each. Deletes data/n1..n3. Run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/../.."
LIMITER_CLUSTER_ARGS="${LIMITER_CLUSTER_ARGS:---no-rls}"
. benchmarks/scripts/local-cluster.sh
for run in $(seq 1 "${RUNS:-5}"); do
  start_local_cluster data/outage-cluster.log
  ./limiter bench --server $S --connections 8 --deadline-ms 50 --duration 16 --warmup 2 > data/outage-bench.log 2>&1 &
  BENCH=$!
  sleep 8
  pkill -9 -f 'dev.limiter.server.ServerMain .*--data-dir [^ ]*data/n[123]' || true
  sleep 3
  kill $CLUSTER 2>/dev/null || true; wait $CLUSTER 2>/dev/null || true
  # shellcheck disable=SC2086
  ./limiter cluster ${LIMITER_CLUSTER_ARGS} > data/outage-cluster.log 2>&1 &   # the same data: a restart
  CLUSTER=$!
  wait $BENCH || true
  echo "run $run: $(grep '^{' data/outage-bench.log | tail -1 | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print("maxUs", d["maxUs"], "maxNodeUs", d["maxNodeUs"], "maxSdkUs", d["maxSdkUs"], "errors", d["errors"], "degraded", d["degraded"])')"
  grep '^t=' data/outage-bench.log | awk '{print "  " $1, $4, $5, $6}'
  kill $CLUSTER 2>/dev/null || true; wait $CLUSTER 2>/dev/null || true
done
