#!/usr/bin/env bash
# Slot map staleness of client/cluster (issue 24, must-show 3), from the
# end-to-end tests' own measurements, COUNT runs each (default 5):
#   - push: 20 slots moved one by one between shardnode masters; worst time
#     from the owner change (the target's SETSLOT NODE; the source's and
#     the third master's follow) to the client's map naming the new
#     owner, polled every 1 ms
#     (target 100 ms), and MOVED replies seen (must be 0);
#   - MOVED: 8 slots moved behind a client with refreshes and push off, on a
#     redis-server and a shardnode cluster (at most one MOVED per slot);
#   - storm: 100 goroutines x 40 GETs over 20 moved slots (at most one
#     refresh per second);
#   - pipeline: pipelines over three masters while a slot moves.
#
#   scripts/bench-cluster-staleness.sh
#   COUNT=10 scripts/bench-cluster-staleness.sh
set -euo pipefail
COUNT=${COUNT:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "machine: $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg); count=$COUNT"
(cd "$here" && go test -count="$COUNT" -v \
  -run 'TestPushRoutesMovedSlots|TestFollowMovedSlots|TestMovedStorm|TestPipelineAcrossMoves' \
  ./client/cluster) >"$log" 2>&1 || { tail -50 "$log"; exit 1; }
echo "push staleness (shardnode), worst per run:"
grep -o 'push staleness: .*' "$log" | sed 's/^/  /'
worst=$(grep -o 'worst [0-9.]*[µm]*s' "$log" | awk '{v=$2; if (v ~ /ms$/) {sub("ms","",v); v=v*1000} else if (v ~ /µs$/) {sub("µs","",v)} else {sub("s","",v); v=v*1e6}; if (v>m) m=v} END {printf "%.1f", m/1000}')
echo "  worst over all runs: ${worst} ms (target 100 ms)"
echo "MOVED per moved slot:"
grep -B1 'slots moved:' "$log" | grep -o '=== RUN.*\|[0-9]* slots moved: .*' | sed 's/=== RUN   //; s/^/  /'
echo "MOVED storm:"
grep -B1 '4000 GETs' "$log" | grep -o '=== RUN.*\|4000 GETs.*' | sed 's/=== RUN   //; s/^/  /'
echo "pipelines during a move:"
grep -B1 'concurrent pipelines' "$log" | grep -o '=== RUN.*\|[0-9]* concurrent pipelines.*' | sed 's/=== RUN   //; s/^/  /'
grep -c -- '--- FAIL' "$log" >/dev/null && { echo "FAILURES:"; grep -- '--- FAIL' "$log"; exit 1; } || true
