#!/usr/bin/env bash
# A rolling restart under load. Starts a fresh local 3-node cluster with three Raft groups (or
# LIMITER_CLUSTER_ARGS), runs 40 s of warm-up load, then the load generator (closed loop) while
# each node in turn is killed with SIGKILL, started again 5 s later with its own command line, and
# given the time for the groups' leaders to spread back (each node leads the group it is preferred
# for, up to 30 s). Every leader change of the run is either a failover (the kill) or a planned
# hand-over (the lead going back to the restarted node).
#
#   benchmarks/scripts/rolling-restart.sh ["<bench args>", default "--connections 4 --pipeline 16"]
#
# Prints, before each kill and at the end, each node's limiter_replication_decisions_dropped_total
# (FAST decisions it answered that never reached the log; a node's count starts again when it is
# restarted) and which groups each node leads, then the calls the SDK decided itself in each phase
# (a node down: from its kill to its restart; back: from its restart to the next kill), from the
# generator's per-second lines, and the generator's report: degraded counts the decisions the SDK
# made itself, maxNodeUs the longest a call waited for a node's answer. It deletes data/n1..n3
# first. Bounded: start-up, the warm-up, then at most about 50 s per node.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
. benchmarks/scripts/local-cluster.sh
export LIMITER_CLUSTER_ARGS="${LIMITER_CLUSTER_ARGS:---raft-groups 3 --no-rls}"
ROW="${1:---connections 4 --pipeline 16}"
start_local_cluster data/rolling-restart.log

# The groups node $1 (1-3) leads, from its admin /status (curl: a JVM started every second to ask
# would take a good part of this machine's two cores from the nodes).
leads() {
  curl -s -m 2 "127.0.0.1:748$1/status" | grep -o '"group":[0-9]*,"leader":"[^"]*","leaderAddress":"[^"]*","role":"LEADER"' |
    sed 's/"group":\([0-9]*\).*/\1/' | paste -sd, - || true
}

# Each node's dropped decisions and the groups it leads.
report() {
  local line="$1:"
  for i in 1 2 3; do
    line="$line n$i dropped=$(curl -s -m 2 "127.0.0.1:748$i/metrics" | awk '/^limiter_replication_decisions_dropped_total /{print $2}' || true) leads=[$(leads $i)]"
  done
  echo "$line"
}

# Whether every node leads the group it is preferred for (n1 group 0, n2 group 1, n3 group 2).
spread() {
  [ "$(leads 1) $(leads 2) $(leads 3)" = "0 1 2" ]
}

# shellcheck disable=SC2086
./limiter bench --server $S $ROW --duration 38 --warmup 2 > /dev/null 2>&1
for _ in $(seq 1 30); do spread && break; sleep 1; done

# shellcheck disable=SC2086
./limiter bench --server $S $ROW --keys 100000 --duration 150 --warmup 2 > data/rolling-restart-bench.log 2>&1 &
BENCH=$!
echo "$(date +%T) before-any-kill" > data/rolling-restart-phases.log
sleep 10
for id in n1 n2 n3; do
  report "before killing $id"
  pid=$(cat "data/$id/node.pid")
  cwd=$(readlink "/proc/$pid/cwd")
  mapfile -d '' cmd < "/proc/$pid/cmdline"
  kill -9 "$pid"
  echo "$(date +%T) $id-down" >> data/rolling-restart-phases.log
  sleep 5
  echo "$(date +%T) $id-back" >> data/rolling-restart-phases.log
  # Started again as it was, in a session of its own; ./limiter cluster stops it by its node.pid.
  (cd "$cwd" && { setsid "${cmd[@]}" >> "$ROOT/data/$id/node.log" 2>&1 < /dev/null & echo $! > "$ROOT/data/$id/node.pid"; })
  for _ in $(seq 1 45); do sleep 1; spread && break; done
  sleep 3
done
report "at the end"
wait "$BENCH" || true
# The SDK's own decisions per phase: each per-second line (at=, wall clock) goes to the last phase begun by then.
awk 'function secs(t) { split(t, p, ":"); return p[1] * 3600 + p[2] * 60 + p[3] }
  NR == FNR { at[NR] = secs($1); name[NR] = $2; phases = NR; next }
  /^t=/ { for (i = 1; i <= NF; i++) { if ($i ~ /^degraded=/) { d = substr($i, 10) } if ($i ~ /^at=/) { t = secs(substr($i, 4)) } }
    phase = 0; for (i = 1; i <= phases; i++) { if (at[i] <= t) { phase = i } }
    if (phase > 0) { local[phase] += d - last; seconds[phase]++ } last = d }
  END { line = "decided by the SDK, by phase:"; for (i = 1; i <= phases; i++) { line = line " " name[i] "=" local[i] "/" seconds[i] "s" } print line }' \
  data/rolling-restart-phases.log data/rolling-restart-bench.log
tail -n 1 data/rolling-restart-bench.log
