#!/usr/bin/env bash
# Replication benchmark, shardnode->shardnode against redis-server->redis-server
# measured in the same run, alternating for ROUNDS rounds:
#  1. full sync of KEYS keys: time from REPLICAOF to master_link_status:up;
#  2. replication lag under a redis-benchmark SET load on the master
#     (LAG_REQUESTS requests, -c 50 -r 1000000): master_repl_offset -
#     slave_repl_offset in bytes, sampled every LAG_INTERVAL_MS by
#     scripts/repllag over one open connection to each server (INFO
#     replication on the master, the replica, the master again; the
#     master's offset is the mean of its two readings, so the sample is
#     negative when the replica is fully caught up). On both servers
#     slave_repl_offset is the offset of the last command the replica has
#     applied (Redis: master->reploff, advanced after each command runs;
#     shardnode: advanced after each command of the stream is applied).
#     Printed per round: p50, p99, p99.9 and max, and the sample count,
#     and the CPU time (user + system) the master and the replica used per
#     SET of the load (less noisy than the lag on a shared machine).
#  3. the same lag in time, as a client sees it (repllag -probe, run at
#     the same time on its own connections): every LAG_INTERVAL_MS a SET of
#     a probe key on the master, then GETs on the replica until the new
#     value shows; microseconds from the master's acknowledgement to the
#     first GET that sees it. The byte lag depends on when each server
#     reads its offset for INFO relative to when the reply leaves (Redis
#     replies at the end of an event-loop pass, shardnode at once) and on
#     how long INFO waits on the busy master; the time lag does not.
#     Besides the median over rounds of each round's p99, the time lag is
#     printed pooled: all rounds' probes as one distribution.
#
#   scripts/bench-replication.sh            # KEYS=1000000 ROUNDS=3
#   KEYS=1000000 ROUNDS=3 LAG_REQUESTS=1000000 LAG_INTERVAL_MS=10 (defaults)
#   SYNC_ONLY=1 skips the lag part; LAG_ONLY=1 loads no keys before the
#   REPLICAOF (a quick lag-only run while iterating, not comparable with
#   the defaults: the replica's heap is smaller).
#
# History of the lag sampling (docs/BENCHMARKS.md, Replication): until
# 2026-11-30 ~11:00 each sample spawned redis-cli processes (three since
# fc86af5, one before), a few ms of CPU each on the 2-core machine, every
# 20 ms, for -n 400000 (a few hundred samples: p99 was the 2nd-3rd highest).
# Both servers are sampled the same way in every version.
set -euo pipefail
KEYS=${KEYS:-1000000}
ROUNDS=${ROUNDS:-3}
LAG_REQUESTS=${LAG_REQUESTS:-1000000}
LAG_INTERVAL_MS=${LAG_INTERVAL_MS:-10}
SYNC_ONLY=${SYNC_ONLY:-0}
LAG_ONLY=${LAG_ONLY:-0}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
(cd "$here" && go build -o "$work/shardnode" ./cmd/shardnode && go build -o "$work/repllag" ./scripts/repllag)

start() { # impl port
  local bin=redis-server
  [ "$1" = shardnode ] && bin="$work/shardnode"
  mkdir -p "$work/$2"
  "$bin" --port "$2" --bind 127.0.0.1 --save "" --appendonly no --repl-diskless-sync-delay 0 --dir "$work/$2" --loglevel warning >"$work/$2.log" 2>&1 &
  pids+=($!)
  portpid[$2]=$!
  for _ in $(seq 100); do redis-cli -p "$2" ping >/dev/null 2>&1 && return; sleep 0.1; done
  echo "server on $2 did not start" >&2; exit 1
}
# CPU time (user + system, clock ticks) of the server listening on port $1.
hz=$(getconf CLK_TCK)
declare -A portpid
cputicks() { awk '{print $14 + $15}' "/proc/${portpid[$1]}/stat"; }
field() { redis-cli -p "$1" info replication | tr -d '\r' | awk -F: -v f="$2" '$1==f{print $2}'; }
# settle: a write on master $1 reaches replica $2 before the load starts.
# After a diskless sync a master holds the stream until the replica's
# first REPLCONF ACK (Redis and shardnode alike); a load started before
# that measured up to a second of buffered stream (redis-server's p99 in
# LAG_ONLY runs: 0.2-1.0 MB, the first ~1 s of samples at
# slave_repl_offset 0), not the steady lag.
settle() {
  redis-cli -p "$1" set repl:settle 1 >/dev/null
  local want
  want=$(field "$1" master_repl_offset)
  for _ in $(seq 500); do
    [ "$(field "$2" slave_repl_offset)" -ge "$want" ] && return
    sleep 0.01
  done
  echo "replica on $2 did not reach offset $want" >&2
}
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
    [ "$LAG_ONLY" = 1 ] || load "$m"
    t0=$(date +%s.%N)
    redis-cli -p "$s" replicaof 127.0.0.1 "$m" >/dev/null
    until [ "$(field "$s" master_link_status)" = up ]; do sleep 0.02; done
    t1=$(date +%s.%N)
    sync=$(echo "$t1 - $t0" | bc)
    lag="skipped"
    if [ "$SYNC_ONLY" != 1 ]; then
      # Lag under load.
      settle "$m" "$s"
      mc0=$(cputicks "$m"); sc0=$(cputicks "$s")
      redis-benchmark -p "$m" -t set -n "$LAG_REQUESTS" -c 50 -r 1000000 -q >/dev/null 2>&1 &
      bp=$!
      "$work/repllag" -probe -master "127.0.0.1:$m" -replica "127.0.0.1:$s" -interval "${LAG_INTERVAL_MS}ms" -while-pid "$bp" >"$work/tlag" &
      tp=$!
      "$work/repllag" -master "127.0.0.1:$m" -replica "127.0.0.1:$s" -interval "${LAG_INTERVAL_MS}ms" -while-pid "$bp" >"$work/lag"
      wait "$bp" || true
      wait "$tp" || true
      cpu="cpu_us_per_set master=$(echo "scale=1; ($(cputicks "$m") - $mc0) * 1000000 / $hz / $LAG_REQUESTS" | bc) replica=$(echo "scale=1; ($(cputicks "$s") - $sc0) * 1000000 / $hz / $LAG_REQUESTS" | bc)"
      lag=$(awk '{print $1}' "$work/lag" | sort -n | awk '{a[NR]=$1} END {if (NR==0) {print "n/a"; exit}; p=a[int(NR*0.5)+1]; q=a[int(NR*0.99)+1]; t=a[int(NR*0.999)+1]; if (q=="") q=a[NR]; if (t=="") t=a[NR]; print p, q, t, a[NR], "samples=" NR}')
      cp "$work/tlag" "$work/tlag.$impl.$r"
      tlag=$(awk '{print $1}' "$work/tlag" | sort -n | awk '{a[NR]=$1} END {if (NR==0) {print "n/a"; exit}; p=a[int(NR*0.5)+1]; q=a[int(NR*0.99)+1]; t=a[int(NR*0.999)+1]; if (q=="") q=a[NR]; if (t=="") t=a[NR]; print p, q, t, a[NR], "probes=" NR}')
    fi
    echo "round $r $impl sync_seconds=$sync lag_bytes_p50_p99_p999_max=$lag lag_us_p50_p99_p999_max=${tlag:-skipped} ${cpu:-}" | tee -a "$work/results"
    redis-cli -p "$m" shutdown nosave >/dev/null 2>&1 || true
    redis-cli -p "$s" shutdown nosave >/dev/null 2>&1 || true
  done
done
med() { grep " $1 " "$work/results" | sed 's/.*sync_seconds=\([0-9.]*\).*/\1/' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
r=$(med redis); n=$(med shardnode)
# lagmed IMPL UNIT K: median over rounds of field K (1 p50, 2 p99) of the
# byte lag (UNIT bytes) or the probe's time lag (UNIT us).
lagmed() { grep " $1 " "$work/results" | grep -v skipped | sed "s/.*lag_$2_p50_p99_p999_max=//" | awk -v k="$3" '{print $k}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
lagp99() { grep "^round $1 $2 " "$work/results" | sed "s/.*lag_$3_p50_p99_p999_max=//" | awk '{print $2}'; }
if [ "$SYNC_ONLY" != 1 ]; then
  echo "median byte lag p50: redis $(lagmed redis bytes 1) B, shardnode $(lagmed shardnode bytes 1) B; p99: redis $(lagmed redis bytes 2) B, shardnode $(lagmed shardnode bytes 2) B"
  echo "median time lag p50: redis $(lagmed redis us 1) us, shardnode $(lagmed shardnode us 1) us; p99: redis $(lagmed redis us 2) us, shardnode $(lagmed shardnode us 2) us"
  # Pooled: every probe of every round in one distribution (more samples
  # per percentile than one round's ~2,000; rounds differ up to 3x here).
  pooled() { cat "$work"/tlag."$1".* | awk '{print $1}' | sort -n | awk '{a[NR]=$1} END {printf "p50 %d p95 %d p99 %d p99.9 %d us (probes=%d)", a[int(NR*0.5)+1], a[int(NR*0.95)+1], a[int(NR*0.99)+1], a[int(NR*0.999)+1], NR}'; }
  echo "pooled time lag, all rounds: redis $(pooled redis); shardnode $(pooled shardnode)"
  for rd in $(seq "$ROUNDS"); do
    for u in bytes us; do
      a=$(lagp99 "$rd" redis $u); b=$(lagp99 "$rd" shardnode $u)
      v="no"; [ "$b" -le "$a" ] && v="yes"
      echo "round $rd $u lag p99 shardnode <= redis: $v ($b vs $a)"
    done
  done
fi
echo "median full sync: redis ${r}s, shardnode ${n}s, ratio $(echo "scale=2; $n / $r" | bc)"
