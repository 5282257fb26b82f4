#!/usr/bin/env bash
# Runs load-generator rows against a fresh local 3-node cluster after 40 s of warm-up load, one
# summary line per row, then stops the cluster. Used for the figures in docs/cluster.md and docs/notes/.
#
#   benchmarks/scripts/cluster-rows.sh "--connections 4 --rate 200 --route /bench-strict" "--connections 50 --pipeline 16"
#
# Each row runs as: ./limiter bench --server <the three nodes> <row> --keys 100000 --duration 8 --warmup 2
# It deletes data/n1..n3 (the local cluster's state) first; nodes take extra JVM flags from
# LIMITER_JAVA_OPTS, and ./limiter cluster its options from LIMITER_CLUSTER_ARGS (for example
# "--raft-groups 3"), and LIMITER_WARMUP_SECONDS lengthens the warm-up load (default 40; on a
# 2-core machine hosting all three nodes, C2 keeps compiling Ratis, gRPC and Netty code for minutes,
# longer with several groups: use 300 there, see
# docs/notes/2026-12-04-three-groups-after-five-minutes.md). Bounded: start-up, the warm-up
# and 10 s a row.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -gt 0 ] || { echo "usage: $0 \"<bench args>\"..." >&2; exit 2; }
. benchmarks/scripts/local-cluster.sh
start_local_cluster data/cluster-rows.log
./limiter bench --server $S --connections 4 --pipeline 64 --duration 12 --warmup 2 > /dev/null 2>&1
./limiter bench --server $S --connections 4 --pipeline 8 --route /bench-strict --duration 10 --warmup 1 > /dev/null 2>&1
./limiter bench --server $S --connections 4 --rate 2000 --route /bench-strict --duration 12 --warmup 1 > /dev/null 2>&1
EXTRA=$(( ${LIMITER_WARMUP_SECONDS:-40} - 40 ))
if [ "$EXTRA" -gt 0 ]; then
  ./limiter bench --server $S --connections 4 --pipeline 16 --duration "$EXTRA" --warmup 1 > /dev/null 2>&1
fi
for row in "$@"; do
  # shellcheck disable=SC2086
  echo "$row: $(./limiter bench --server $S $row --keys 100000 --duration 8 --warmup 2 2>/dev/null | tail -1)"
done
