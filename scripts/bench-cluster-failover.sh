#!/usr/bin/env bash
# Cluster failover time: 3 masters x 1 replica, cluster-node-timeout
# TIMEOUT ms (default 1000), kill -9 of a master with keys; seconds from the
# kill until its replica says role:master and every live node reports
# cluster_state:ok with the dead master flagged fail. shardnode and
# redis-server clusters built the same way (redis-cli --cluster create),
# ROUNDS rounds each (default 5), alternating; prints every round and the
# medians. Each round also runs scripts/cfwriter with two outside clients
# in the same process, 16 goroutines each writing to the victim's slots
# and to the other masters' slots: client/cluster ("shardis") and a plain
# go-redis ClusterClient with default options ("plain"), started in an
# order that alternates between rounds. Each reports the seconds from the
# kill to its first successful write started after the killed process was
# gone, and its failed writes on the other masters' slots.
# CLIENTS=plain (or shardis) measures one client only.
#
# The nodes run with cluster-require-full-coverage FULL_COVERAGE (default
# no: the other masters keep serving while the victim's slots are down;
# yes makes every node answer CLUSTERDOWN from the FAIL to the promotion).
#
#   scripts/bench-cluster-failover.sh
#   ROUNDS=7 TIMEOUT=2000 scripts/bench-cluster-failover.sh
set -euo pipefail
ROUNDS=${ROUNDS:-5}
TIMEOUT=${TIMEOUT:-1000}
FULL_COVERAGE=${FULL_COVERAGE:-no}
BASE=${BASE:-34000}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pids=()
trap 'kill -9 "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null; rm -rf "$work"' EXIT
(cd "$here" && go build -o "$work/shardnode.bin" ./cmd/shardnode && go build -o "$work/cfwriter" ./scripts/cfwriter)

now() { date +%s.%N; }

round() { # kind round
  local kind=$1 r=$2 bin=redis-server addrs=()
  [ "$kind" = shardnode ] && bin="$work/shardnode.bin"
  pids=()
  for i in 0 1 2 3 4 5; do
    local p=$((BASE + i)) d="$work/$kind-$r/$((BASE + i))"
    mkdir -p "$d"
    "$bin" --port "$p" --bind 127.0.0.1 --cluster-enabled yes --cluster-node-timeout "$TIMEOUT" \
      --cluster-require-full-coverage "$FULL_COVERAGE" \
      --cluster-config-file "$d/nodes.conf" --dir "$d" --save "" --appendonly no \
      --repl-diskless-sync-delay 0 --loglevel warning >"$d/log" 2>&1 &
    pids+=($!)
    addrs+=("127.0.0.1:$p")
  done
  for i in 0 1 2 3 4 5; do
    for _ in $(seq 100); do redis-cli -p $((BASE + i)) ping >/dev/null 2>&1 && break; sleep 0.05; done
  done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$work/$kind-$r.create" 2>&1 ||
    { echo "$kind round $r: redis-cli --cluster create failed:"; tail -5 "$work/$kind-$r.create"; exit 1; }
  # Wait for ok and for the replica of BASE+1 to be in sync.
  local victim=$((BASE + 1)) heir=""
  for _ in $(seq 300); do
    local ok=1
    for i in 0 1 2 3 4 5; do
      redis-cli -p $((BASE + i)) cluster info 2>/dev/null | grep -q cluster_state:ok || ok=0
    done
    local vid
    vid=$(redis-cli -p "$victim" cluster myid)
    for i in 0 1 2 3 4 5; do
      if redis-cli -p $((BASE + i)) cluster nodes | grep myself | grep -q "slave $vid"; then heir=$((BASE + i)); fi
    done
    [ $ok = 1 ] && [ -n "$heir" ] && redis-cli -p "$heir" info replication | grep -q master_link_status:up && break
    sleep 0.1
  done
  for k in $(seq 1 200); do redis-cli -c -p "$BASE" set "key:$k" "$k" >/dev/null; done
  # The victim (BASE+1) holds slots 5461-10922 after redis-cli --cluster create.
  local fifo="$work/$kind-$r.fifo"
  mkfifo "$fifo"
  local order=${CLIENTS:-}
  if [ -z "$order" ]; then
    if [ $((r % 2)) = 1 ]; then order=shardis,plain; else order=plain,shardis; fi
  fi
  "$work/cfwriter" -seed "127.0.0.1:$BASE" -from 5461 -to 10922 -clients "$order" -goroutines 16 -others \
    <"$fifo" >"$work/$kind-$r.client" 2>>"$work/cfwriter.log" &
  local wpid=$!
  exec 9>"$fifo"
  sleep 1
  local t0 t1 vpid tk td
  vpid=${pids[1]}
  t0=$(now)
  tk=$(date +%s%N)
  kill -9 "$vpid"
  wait "$vpid" 2>/dev/null || true
  td=$(date +%s%N)
  echo "$tk $td" >&9
  for _ in $(seq 600); do
    if redis-cli -p "$heir" role 2>/dev/null | head -1 | grep -q master; then
      local ok=1
      for i in 0 2 3 4 5; do
        local p=$((BASE + i))
        redis-cli -p "$p" cluster info 2>/dev/null | grep -q cluster_state:ok || { ok=0; break; }
        redis-cli -p "$p" cluster nodes 2>/dev/null | grep "$(cat "$work/$kind-$r/$victim/nodes.conf" | grep myself | cut -d' ' -f1)" | grep -q "fail " || { ok=0; break; }
      done
      [ $ok = 1 ] && break
    fi
    sleep 0.02
  done
  t1=$(now)
  wait "$wpid" 2>/dev/null || true
  exec 9>&-
  local cl
  cl=$(tr '\n' ' ' <"$work/$kind-$r.client")
  echo "$kind $(echo "$t1 - $t0" | bc)" >>"$work/res"
  while read -r name secs errs; do echo "$kind-$name $secs $errs" >>"$work/client"; done <"$work/$kind-$r.client"
  printf '%-10s round %d: cluster %.2f s; clients (%s first) write again after: %s\n' "$kind" "$r" "$(echo "$t1 - $t0" | bc)" "${order%%,*}" "$cl"
  kill -9 "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  pids=()
}

echo "machine: $(nproc) cores; cluster-node-timeout=$TIMEOUT cluster-require-full-coverage=$FULL_COVERAGE rounds=$ROUNDS load: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
  round redis "$r"
  round shardnode "$r"
done
med() { grep "^$1 " "$2" | awk '{print $2}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
rm_=$(med redis "$work/res"); sm=$(med shardnode "$work/res")
printf 'redis      median %.2f s\nshardnode  median %.2f s\nratio shardnode/redis: %.2f\n' "$rm_" "$sm" "$(echo "$sm / $rm_" | bc -l)"
for k in redis shardnode; do
  for c in shardis plain; do
    grep -q "^$k-$c " "$work/client" || continue
    printf '%-10s %-8s writes again: median %s s; failed writes on other slots, all rounds: %s\n' "$k" "$c" \
      "$(med "$k-$c" "$work/client")" "$(grep "^$k-$c " "$work/client" | awk '{s+=$3} END {print s+0}')"
  done
done
