#!/usr/bin/env bash
# Replication benchmark, shardnode->shardnode against redis-server->redis-server
# measured in the same run, alternating for ROUNDS rounds:
#  1. full sync of KEYS keys: time from REPLICAOF to master_link_status:up;
#  2. replication lag under a redis-benchmark SET load on the master:
#     master_repl_offset - slave_repl_offset sampled every 20 ms (bytes),
#     the master's offset averaged over readings before and after the
#     replica's (negative when the replica is fully caught up).
#
#   scripts/bench-replication.sh            # KEYS=1000000 ROUNDS=3
set -euo pipefail
KEYS=${KEYS:-1000000}
ROUNDS=${ROUNDS:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
(cd "$here" && go build -o "$work/shardnode" ./cmd/shardnode)

start() { # impl port
  local bin=redis-server
  [ "$1" = shardnode ] && bin="$work/shardnode"
  mkdir -p "$work/$2"
  "$bin" --port "$2" --bind 127.0.0.1 --save "" --appendonly no --repl-diskless-sync-delay 0 --dir "$work/$2" --loglevel warning >"$work/$2.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do redis-cli -p "$2" ping >/dev/null 2>&1 && return; sleep 0.1; done
  echo "server on $2 did not start" >&2; exit 1
}
field() { redis-cli -p "$1" info replication | tr -d '\r' | awk -F: -v f="$2" '$1==f{print $2}'; }
load() {
  awk -v n="$KEYS" 'BEGIN { for (i = 0; i < n; i++) { k = sprintf("key:%012d", i); v = sprintf("val:%012d", i); printf "*3\r\n$3\r\nSET\r\n$16\r\n%s\r\n$16\r\n%s\r\n", k, v } }' |
    redis-cli -p "$1" --pipe >/dev/null
}

echo "machine: $(nproc) cores; keys=$KEYS rounds=$ROUNDS"
port=18000
for r in $(seq "$ROUNDS"); do
  for impl in redis shardnode; do
    m=$((port++)); s=$((port++))
    start "$impl" "$m"; start "$impl" "$s"
    load "$m"
    t0=$(date +%s.%N)
    redis-cli -p "$s" replicaof 127.0.0.1 "$m" >/dev/null
    until [ "$(field "$s" master_link_status)" = up ]; do sleep 0.02; done
    t1=$(date +%s.%N)
    sync=$(echo "$t1 - $t0" | bc)
    # Lag under load.
    redis-benchmark -p "$m" -t set -n 400000 -c 50 -r 1000000 -q >/dev/null 2>&1 &
    bp=$!
    : >"$work/lag"
    while kill -0 "$bp" 2>/dev/null; do
      # The master's offset is read before and after the replica's and
      # averaged: each redis-cli call takes milliseconds, during which the
      # master keeps writing, so reading one side first would add (or
      # subtract) the master's write rate times that gap to the lag.
      mo1=$(field "$m" master_repl_offset); so=$(field "$s" slave_repl_offset); mo2=$(field "$m" master_repl_offset)
      [ -n "$mo1" ] && [ -n "$mo2" ] && [ -n "$so" ] && echo $(((mo1 + mo2) / 2 - so)) >>"$work/lag"
      sleep 0.02
    done
    lag=$(sort -n "$work/lag" | awk '{a[NR]=$1} END {if (NR==0) {print "n/a n/a"; exit}; p50=a[int(NR*0.5)+1]; p99=a[int(NR*0.99)+1]; if (p99=="") p99=a[NR]; print p50, p99}')
    echo "round $r $impl sync_seconds=$sync lag_bytes_p50_p99=$lag" | tee -a "$work/results"
    redis-cli -p "$m" shutdown nosave >/dev/null 2>&1 || true
    redis-cli -p "$s" shutdown nosave >/dev/null 2>&1 || true
  done
done
med() { grep " $1 " "$work/results" | sed 's/.*sync_seconds=\([0-9.]*\).*/\1/' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
r=$(med redis); n=$(med shardnode)
echo "median full sync: redis ${r}s, shardnode ${n}s, ratio $(echo "scale=2; $n / $r" | bc)"
