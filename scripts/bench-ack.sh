#!/usr/bin/env bash
# The cost of acknowledged writes (min-replicas-ack, issue 27 must-show 2):
# redis-benchmark SET, unpipelined and -P 16, against a shardnode master
# with 1 or 2 shardnode replicas, acknowledgement off and on (n = 1, n = 2),
# and against a redis-server master with one redis-server replica
# (asynchronous) in the same run. Configurations alternate within each
# round, so load from elsewhere on the machine spreads over all of them.
# Printed per run: requests per second, p99 latency (ms), and the CPU time
# (user + system, from /proc/<pid>/stat) the master and the replicas
# together used per SET, which, unlike throughput, does not depend much on
# what else runs on the machine; at the end the median over rounds and the
# throughput ratio to the same shardnode topology with acknowledgement off.
#
#   scripts/bench-ack.sh                   # ROUNDS=3 REQUESTS=200000 PIPE_REQUESTS=1000000
#   ROUNDS=1 REQUESTS=50000 PIPE_REQUESTS=200000 scripts/bench-ack.sh   # quick
#
# Every server: --save "" --appendonly no, 127.0.0.1, ports from BASEPORT
# (default 18600). Clients: -c 50, keys from -r 100000, 3-byte values.
set -euo pipefail
ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-200000}
PIPE_REQUESTS=${PIPE_REQUESTS:-1000000}
BASEPORT=${BASEPORT:-18600}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
(cd "$here" && go build -o "$work/shardnode" ./cmd/shardnode)

start() { # impl port [extra args...]
  local impl=$1 port=$2
  shift 2
  local bin=redis-server
  [ "$impl" = shardnode ] && bin="$work/shardnode"
  mkdir -p "$work/$port"
  "$bin" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --repl-diskless-sync-delay 0 \
    --dir "$work/$port" --loglevel warning "$@" >"$work/$port.log" 2>&1 &
  pids+=($!)
  portpid[$port]=$!
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && return; sleep 0.1; done
  echo "server on $port did not start" >&2
  exit 1
}
declare -A portpid
hz=$(getconf CLK_TCK)
cputicks() { awk '{print $14 + $15}' "/proc/${portpid[$1]}/stat"; }
field() { redis-cli -p "$1" info replication | tr -d '\r' | awk -F: -v f="$2" '$1==f{print $2}'; }

# run NAME IMPL REPLICAS ACK: one configuration, both pipelinings.
run() {
  local name=$1 impl=$2 nrep=$3 ack=$4
  local m=$((BASEPORT)) i
  start "$impl" "$m"
  for i in $(seq "$nrep"); do
    start "$impl" $((m + i))
    redis-cli -p $((m + i)) replicaof 127.0.0.1 "$m" >/dev/null
  done
  for i in $(seq "$nrep"); do
    until [ "$(field $((m + i)) master_link_status)" = up ]; do sleep 0.05; done
  done
  until [ "$(field "$m" connected_slaves)" = "$nrep" ]; do sleep 0.05; done
  if [ "$ack" != 0 ]; then
    redis-cli -p "$m" config set min-replicas-ack "$ack" >/dev/null
    until redis-cli -p "$m" set ack:probe 1 | grep -q OK; do sleep 0.05; done
  fi
  for p in 1 16; do
    local n=$REQUESTS
    [ "$p" = 16 ] && n=$PIPE_REQUESTS
    local csv mc0 rc0=0 rc1=0
    mc0=$(cputicks "$m")
    for i in $(seq "$nrep"); do rc0=$((rc0 + $(cputicks $((m + i))))); done
    csv=$(redis-benchmark -p "$m" -t set -n "$n" -c 50 -r 100000 -P "$p" --csv 2>/dev/null | grep '"SET"' | tr -d '"')
    local mcpu rcpu rps p99
    mcpu=$(echo "scale=2; ($(cputicks "$m") - $mc0) * 1000000 / $hz / $n" | bc)
    for i in $(seq "$nrep"); do rc1=$((rc1 + $(cputicks $((m + i))))); done
    rcpu=$(echo "scale=2; ($rc1 - $rc0) * 1000000 / $hz / $n" | bc)
    rps=$(echo "$csv" | cut -d, -f2)
    p99=$(echo "$csv" | cut -d, -f7)
    local errs=0
    [ "$impl" = shardnode ] && [ "$ack" != 0 ] && errs=$(field "$m" min_replicas_ack_timeouts)
    echo "round $round $name P$p rps=$rps p99_ms=$p99 master_cpu_us=$mcpu replicas_cpu_us=$rcpu ack_timeouts=$errs" | tee -a "$work/results"
  done
  for i in $(seq 0 "$nrep"); do redis-cli -p $((m + i)) shutdown nosave >/dev/null 2>&1 || true; done
  sleep 0.3
}

configs=(
  "redis-async-1 redis 1 0"
  "shard-off-1 shardnode 1 0"
  "shard-ack1-1 shardnode 1 1"
  "shard-off-2 shardnode 2 0"
  "shard-ack1-2 shardnode 2 1"
  "shard-ack2-2 shardnode 2 2"
)
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); rounds=$ROUNDS requests=$REQUESTS pipelined=$PIPE_REQUESTS"
for round in $(seq "$ROUNDS"); do
  for c in "${configs[@]}"; do
    # shellcheck disable=SC2086
    run $c
  done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
med() { # name pipe field
  grep " $1 P$2 " "$work/results" | sed "s/.* $3=\([0-9.]*\).*/\1/" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
printf '%-14s %-4s %12s %9s %14s %14s %15s\n' config pipe rps p99_ms rps_vs_ack_off master_cpu_us replicas_cpu_us
for c in "${configs[@]}"; do
  set -- $c
  for p in 1 16; do
    r=$(med "$1" "$p" rps); q=$(med "$1" "$p" p99_ms)
    base=""
    case $1 in
      shard-ack*-1) base=$(med shard-off-1 "$p" rps) ;;
      shard-ack*-2) base=$(med shard-off-2 "$p" rps) ;;
    esac
    ratio="-"
    [ -n "$base" ] && ratio=$(echo "scale=2; $r / $base" | bc)
    printf '%-14s P%-3s %12s %9s %14s %14s %15s\n' "$1" "$p" "$r" "$q" "$ratio" "$(med "$1" "$p" master_cpu_us)" "$(med "$1" "$p" replicas_cpu_us)"
  done
done
