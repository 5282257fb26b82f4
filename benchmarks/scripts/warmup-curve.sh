#!/usr/bin/env bash
# Throughput of a fresh local 3-node cluster over its first minutes under closed-loop load: N
# back-to-back 18 s runs of --connections 4 --pipeline 16, each printed with the nodes' CPU
# microseconds per decision and the CPU node n1's C2 compiler threads used meanwhile (ticks of
# 10 ms); then light-load and 50-connection rows on the warm cluster. Shows how long the JIT takes
# to settle on this machine (docs/cluster.md, "Several Raft groups").
#
#   benchmarks/scripts/warmup-curve.sh 14                       # one group
#   LIMITER_CLUSTER_ARGS="--raft-groups 3" benchmarks/scripts/warmup-curve.sh 14
#
# Deletes data/n1..n3 first. Bounded: start-up, N x about 20 s, and three 10 s rows.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:?usage: $0 <runs of 18 s>}
. benchmarks/scripts/local-cluster.sh
start_local_cluster data/warmup-curve.log
N1=$(pgrep -f -- '--node-id n1' | head -1)
c2_ticks() {
  for t in /proc/"$N1"/task/*; do
    if [ "$(cat "$t/comm" 2>/dev/null || true)" = "C2 CompilerThre" ]; then
      awk '{print $14 + $15}' "$t/stat" 2>/dev/null || true
    fi
  done | awk '{s += $1} END {print s + 0}'
}
summary() {
  python3 -c "import sys, json; d = json.loads(sys.stdin.read().strip().splitlines()[-1]); print(d['decisionsPerSec'], 'decisions/s, raw p50', d['rawP50Us'], 'us, p99', d['rawP99Us'], 'us, degraded', d['degraded'], ', CPU us per decision per node', [n['cpuUsPerDecision'] for n in d['nodes']])"
}
for i in $(seq 1 "$RUNS"); do
  before=$(c2_ticks)
  line=$(./limiter bench --server $S --connections 4 --pipeline 16 --duration 18 --warmup 1 --keys 100000 2>/dev/null | summary)
  echo "t=$((i * 20))s: $line; n1 C2 $(( $(c2_ticks) - before )) ticks"
done
for row in "--connections 50 --pipeline 16" "--connections 4 --rate 200 --route /bench-strict" "--connections 4 --rate 2000"; do
  # shellcheck disable=SC2086
  echo "$row: $(./limiter bench --server $S $row --keys 100000 --duration 8 --warmup 2 2>/dev/null | summary)"
done
