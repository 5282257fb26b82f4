# Sourced by the benchmark scripts: start_local_cluster <log file> deletes data/n1..n3, starts
# ./limiter cluster with LIMITER_CLUSTER_ARGS in the background (stopped when the script exits) and
# waits up to 60 s for a leader. Sets S to the three data-plane addresses. Run from the repository root.
S=127.0.0.1:7401,127.0.0.1:7402,127.0.0.1:7403

start_local_cluster() {
  rm -rf data/n1 data/n2 data/n3
  # shellcheck disable=SC2086
  ./limiter cluster ${LIMITER_CLUSTER_ARGS:-} > "$1" 2>&1 &
  CLUSTER=$!
  trap 'kill $CLUSTER 2>/dev/null || true; wait $CLUSTER 2>/dev/null || true' EXIT
  for _ in $(seq 1 60); do
    sleep 1
    kill -0 "$CLUSTER" 2>/dev/null || break # it gave up: every node stopped
    if ./limiter status --server $S --json 2>/dev/null | grep -q '"LEADER"'; then
      sleep 2
      return 0
    fi
  done
  echo "no leader within 60 s; $1 and data/n1..n3/node.log say why:" >&2
  tail -n 20 "$1" >&2
  exit 1
}
