#!/usr/bin/env bash
# Slot map staleness of client/cluster (issue 24, must-show 3), from the
# end-to-end tests' own measurements, COUNT runs each (default 5):
#   - push: 20 slots moved one by one between shardnode masters (the
#     nodes as their own processes, as deployed, then in the test's
#     process for comparison); per run
#     the median and worst time to the client's map naming the new owner
#     (a poller, every 1 ms, watching while the move's SETSLOT NODEs are
#     sent), from just before the target's SETSLOT NODE and from its reply
#     (target 100 ms), how long the target took to reply (it saves
#     nodes.conf before it serves the slot and replies), how long the
#     three SETSLOT NODEs took (each node
#     saves nodes.conf before it replies), the test process's longest
#     pause (a 1 ms ticker's largest gap), the test process's longest GC
#     pause and goroutine scheduling latency (Go runtime metrics: a
#     ticker gap they do not explain is the OS not running the process),
#     and the MOVED replies seen (must be 0);
#   - push from a bystander: the client watches one master, slots move
#     between the two others (SETSLOT NODE to those two only);
#   - MOVED: 8 slots moved behind a client with refreshes and push off, on a
#     redis-server and a shardnode cluster (at most one MOVED per slot);
#   - storm: 100 goroutines x 40 GETs over 20 moved slots (at most one
#     refresh per second);
#   - pipeline: pipelines over three masters while a slot moves.
# LOAD=N runs N busy loops and one writer that fsyncs 32 MB files in a loop
# beside the tests (all at the tests' priority), to reproduce a loaded
# machine.
#
#   scripts/bench-cluster-staleness.sh
#   COUNT=11 LOAD=2 scripts/bench-cluster-staleness.sh
set -euo pipefail
COUNT=${COUNT:-5}
LOAD=${LOAD:-0}
here=$(cd "$(dirname "$0")/.." && pwd)
log=$(mktemp)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -f "$log" "$log.load"
}
trap cleanup EXIT
if [ "$LOAD" -gt 0 ]; then
  for _ in $(seq "$LOAD"); do (while :; do :; done) & pids+=($!); done
  (while :; do dd if=/dev/zero of="$log.load" bs=1M count=32 conv=fsync status=none; done) & pids+=($!)
fi
# One shardnode binary for every run's node processes.
bin=$(mktemp -d)
trap 'cleanup; rm -rf "$bin"' EXIT
(cd "$here" && go build -o "$bin/shardnode" ./cmd/shardnode)
export CLUSTERTEST_SHARDNODE="$bin/shardnode"
echo "machine: $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg); count=$COUNT; extra load: $LOAD busy loops + fsync writer ($([ "$LOAD" -gt 0 ] && echo on || echo off))"
(cd "$here" && go test -count="$COUNT" -timeout 30m -v \
  -run 'TestPushRoutesMovedSlots|TestPushFromBystander|TestFollowMovedSlots|TestMovedStorm|TestPipelineAcrossMoves' \
  ./client/cluster) >"$log" 2>&1 || {
  cp "$log" "${TMPDIR:-/tmp}/bench-cluster-staleness.log"
  grep -B2 -A12 -- '--- FAIL' "$log" | grep -v '^    --- PASS' | head -80
  echo "full log: ${TMPDIR:-/tmp}/bench-cluster-staleness.log"
  exit 1
}
# us VALUE: a Go duration in microseconds.
us() { awk -v v="$1" 'BEGIN { if (v ~ /ms$/) {sub("ms","",v); v*=1000} else if (v ~ /µs$/) {sub("µs","",v)} else if (v ~ /m[0-9]/) {v=9e9} else {sub("s","",v); v*=1e6}; printf "%d", v }'; }
for kind in shardnode-process shardnode; do
  echo "push staleness ($kind): per run, the client's map names the new owner"
  echo "  from SETSLOT NODE (median, worst) | from its reply (median, worst) | target replied after | 3 SETSLOTs took | process paused | GC pause | sched latency"
  wc=0; wr=0; runs=0; met=0
  while read -r mc wc1 mr wr1 ad pz gc sl tr; do
    printf '  %10s %10s | %10s %10s | %10s | %10s | %10s | %9s | %9s\n' "$mc" "$wc1" "$mr" "$wr1" "$tr" "$ad" "$pz" "$gc" "$sl"
    a=$(us "$wc1"); b=$(us "$wr1")
    runs=$((runs + 1)); [ "$a" -le 100000 ] && met=$((met + 1))
    [ "$a" -gt "$wc" ] && wc=$a
    [ "$b" -gt "$wr" ] && wr=$b
  done < <(grep -o "push staleness ($kind): .*" "$log" | sed -E 's/.*SETSLOT NODE median ([^ ]+) worst ([^,]+), from its reply median ([^ ]+) worst ([^;]+); the 3 SETSLOT NODEs took up to ([^;]+); process paused up to ([^;]+);.*GC pauses up to ([^,]+), goroutines waited for a thread up to ([^;]+); the target.s SETSLOT NODE replied after up to (.*)$/\1 \2 \3 \4 \5 \6 \7 \8 \9/')
  echo "  worst over all runs: $((wc / 1000)) ms from SETSLOT NODE, $((wr / 1000)) ms from its reply; worst <= 100 ms from SETSLOT NODE in $met of $runs runs"
done
echo "push from a bystander (the client watches neither node that changed):"
grep -o 'push from a bystander .*' "$log" | sed 's/^/  /'
echo "MOVED per moved slot:"
grep -B1 'slots moved:' "$log" | grep -o '=== RUN.*\|[0-9]* slots moved: .*' | sed 's/=== RUN   //; s/^/  /'
echo "MOVED storm:"
grep -B1 '4000 GETs' "$log" | grep -o '=== RUN.*\|4000 GETs.*' | sed 's/=== RUN   //; s/^/  /'
echo "pipelines during a move:"
grep -B1 'concurrent pipelines' "$log" | grep -o '=== RUN.*\|[0-9]* concurrent pipelines.*' | sed 's/=== RUN   //; s/^/  /'
grep -c -- '--- FAIL' "$log" >/dev/null && { echo "FAILURES:"; grep -- '--- FAIL' "$log"; exit 1; } || true
