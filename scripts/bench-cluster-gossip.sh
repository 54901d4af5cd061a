#!/usr/bin/env bash
# Gossip cost of an idle cluster: NODES nodes (half masters, half replicas,
# made by redis-cli --cluster create) of shardnode, then of redis-server,
# built the same way in the same run, each measured for SECONDS seconds
# once the cluster is ok. Per node: bytes written and read per second
# (/proc/<pid>/io wchar/rchar: an idle node's only socket traffic is the
# bus), CPU (utime+stime from /proc/<pid>/stat) and context switches
# (voluntary + involuntary, summed over the process's threads), averaged
# over the nodes; then the shardnode/redis ratios.
#
#   scripts/bench-cluster-gossip.sh                 # 30 nodes, 30 s
#   NODES=12 SECONDS_=10 scripts/bench-cluster-gossip.sh
#
# Both kinds run with the same cluster-node-timeout (TIMEOUT ms, default
# Redis's 15000), which sets the ping schedule.
set -euo pipefail
NODES=${NODES:-30}
SECS=${SECONDS_:-30}
TIMEOUT=${TIMEOUT:-15000}
BASE=${BASE:-22000} # bus ports BASE+10000..: below the ephemeral range (32768-)
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
(cd "$here" && go build -o "$work/shardnode.bin" ./cmd/shardnode)
hz=$(getconf CLK_TCK)

run() { # kind
  local kind=$1 bin=redis-server
  [ "$kind" = shardnode ] && bin="$work/shardnode.bin"
  pids=()
  local addrs=()
  for i in $(seq 0 $((NODES - 1))); do
    local p=$((BASE + i)) d="$work/$kind/$((BASE + i))"
    mkdir -p "$d"
    "$bin" --port "$p" --bind 127.0.0.1 --cluster-enabled yes --cluster-node-timeout "$TIMEOUT" \
      --cluster-config-file "$d/nodes.conf" --dir "$d" --save "" --appendonly no \
      --repl-diskless-sync-delay 0 --loglevel warning >"$d/log" 2>&1 &
    pids+=($!)
    addrs+=("127.0.0.1:$p")
  done
  for i in $(seq 0 $((NODES - 1))); do
    for _ in $(seq 100); do redis-cli -p $((BASE + i)) ping >/dev/null 2>&1 && break; sleep 0.1; done
  done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$work/$kind.create" 2>&1
  for _ in $(seq 300); do
    local ok=1
    for i in $(seq 0 $((NODES - 1))); do
      redis-cli -p $((BASE + i)) cluster info 2>/dev/null | grep -q cluster_state:ok || { ok=0; break; }
    done
    [ $ok = 1 ] && break
    sleep 0.2
  done
  sleep 2 # let the join's burst pass
  local w0=0 r0=0 c0=0 x0=0 w1=0 r1=0 c1=0 x1=0
  snap() {
    local w=0 r=0 c=0 x=0
    for pid in "${pids[@]}"; do
      w=$((w + $(awk '/^wchar/{print $2}' /proc/$pid/io)))
      r=$((r + $(awk '/^rchar/{print $2}' /proc/$pid/io)))
      c=$((c + $(awk '{print $14 + $15}' /proc/$pid/stat)))
      x=$((x + $(cat /proc/$pid/task/*/status | awk '/^(non)?voluntary_ctxt_switches/ {s += $2} END {print s}')))
    done
    echo "$w $r $c $x"
  }
  read -r w0 r0 c0 x0 < <(snap)
  sleep "$SECS"
  read -r w1 r1 c1 x1 < <(snap)
  awk -v k="$kind" -v n="$NODES" -v s="$SECS" -v hz="$hz" -v dw=$((w1 - w0)) -v dr=$((r1 - r0)) -v dc=$((c1 - c0)) -v dx=$((x1 - x0)) \
    'BEGIN { printf "%-10s sent %8.0f B/s  received %8.0f B/s  cpu %6.3f %% per node  %6.1f context switches/s per node\n", k, dw/n/s, dr/n/s, 100*dc/hz/n/s, dx/n/s;
             print k, dw/n/s, dr/n/s, 100*dc/hz/n/s, dx/n/s > "/dev/stderr" }' 2>>"$work/res"
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  pids=()
}

echo "machine: $(nproc) cores; nodes=$NODES seconds=$SECS cluster-node-timeout=$TIMEOUT load: $(cut -d' ' -f1-3 /proc/loadavg)"
for kind in ${KINDS:-redis shardnode}; do run "$kind"; done
awk '{v[$1]=$0; s[$1]=$2; r[$1]=$3; c[$1]=$4; x[$1]=$5} END {
  printf "ratio shardnode/redis: sent %.2f  received %.2f  cpu %.2f  context switches %.2f\n", s["shardnode"]/s["redis"], r["shardnode"]/r["redis"], c["shardnode"]/c["redis"], x["shardnode"]/x["redis"] }' "$work/res"
