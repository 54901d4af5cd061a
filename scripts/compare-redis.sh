#!/usr/bin/env bash
# compare-redis.sh: "shardnode compare" against real Redis: a redis-server +
# redis-sentinel pre-sharding deployment and a redis-server cluster, each of
# MASTERS masters with one replica, both with the failure detection of
# compare's own run (down-after-milliseconds = cluster-node-timeout = 2000),
# appendonly everysec, on 127.0.0.1. The disruptive phases run too
# (--disruptive: kill -9 through the pid from INFO server; growth onto one
# extra empty redis-server each).
#
#   scripts/compare-redis.sh [out-dir]     (default compare-redis)
#
# Writes <out>/presharding/ and <out>/cluster/ (results.json, compare.png,
# each with one topology), and <out>/table.txt. Needs redis-server,
# redis-sentinel and redis-cli 7.x on the PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-compare-redis}
MASTERS=${MASTERS:-3}
DURATION=${DURATION:-20s}
DOWN_AFTER_MS=2000
BASE=${BASE:-41000}
WORK=$(mktemp -d)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

start_redis() { # port [extra directives...]
	local port=$1; shift
	mkdir -p "$WORK/$port"
	{
		echo "port $port"; echo "bind 127.0.0.1"; echo "dir $WORK/$port"; echo "daemonize no"
		echo "appendonly yes"; echo "appendfsync everysec"; echo 'save ""'; echo "repl-diskless-sync-delay 0"
		for d in "$@"; do echo "$d"; done
	} >"$WORK/$port/redis.conf"
	redis-server "$WORK/$port/redis.conf" >"$WORK/$port/log" 2>&1 &
	PIDS+=($!)
}
wait_ping() {
	for _ in $(seq 100); do redis-cli -p "$1" ping >/dev/null 2>&1 && return 0; sleep 0.1; done
	echo "redis on $1 does not answer" >&2; exit 1
}
for p in $(seq "$BASE" $((BASE + 30))) $(seq $((BASE + 100)) $((BASE + 130))); do
	if (echo >"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "port $p is in use: choose BASE=..." >&2; exit 1; fi
done
go build -o "$WORK/shardnode" ./cmd/shardnode

# Pre-sharding: masters on BASE.., replicas on BASE+10.., Sentinels BASE+20..
names=() sentinels=()
for i in $(seq 0 $((MASTERS - 1))); do
	start_redis $((BASE + i))
	start_redis $((BASE + 10 + i)) "replicaof 127.0.0.1 $((BASE + i))"
	names+=("shard-$((i + 1))")
done
start_redis $((BASE + 30)) # the empty node growth moves a shard to
for i in $(seq 0 $((MASTERS - 1))); do wait_ping $((BASE + i)); wait_ping $((BASE + 10 + i)); done
wait_ping $((BASE + 30))
for s in 0 1 2; do
	port=$((BASE + 20 + s)); mkdir -p "$WORK/s$port"
	{
		echo "port $port"; echo "bind 127.0.0.1"; echo "dir $WORK/s$port"
		for i in $(seq 0 $((MASTERS - 1))); do
			echo "sentinel monitor shard-$((i + 1)) 127.0.0.1 $((BASE + i)) 2"
			echo "sentinel down-after-milliseconds shard-$((i + 1)) $DOWN_AFTER_MS"
			echo "sentinel failover-timeout shard-$((i + 1)) 10000"
		done
	} >"$WORK/s$port/sentinel.conf"
	redis-sentinel "$WORK/s$port/sentinel.conf" >"$WORK/s$port/log" 2>&1 &
	PIDS+=($!)
	sentinels+=("127.0.0.1:$port")
done
sleep 3 # the Sentinels discover the replicas and each other
nice -n 10 "$WORK/shardnode" compare --label redis-server --duration "$DURATION" --down-after ${DOWN_AFTER_MS}ms \
	--sentinels "$(IFS=,; echo "${sentinels[*]}")" --master-names "$(IFS=,; echo "${names[*]}")" \
	--disruptive --grow-node 127.0.0.1:$((BASE + 30)) --out "$OUT/presharding" | tee "$OUT-presharding.txt"

# Cluster: nodes on BASE+100.., the growth node on BASE+130.
nodes=()
for i in $(seq 0 $((2 * MASTERS - 1))); do
	start_redis $((BASE + 100 + i)) "cluster-enabled yes" "cluster-node-timeout $DOWN_AFTER_MS" "cluster-require-full-coverage no"
	nodes+=("127.0.0.1:$((BASE + 100 + i))")
done
start_redis $((BASE + 130)) "cluster-enabled yes" "cluster-node-timeout $DOWN_AFTER_MS" "cluster-require-full-coverage no"
for i in $(seq 0 $((2 * MASTERS - 1))); do wait_ping $((BASE + 100 + i)); done
wait_ping $((BASE + 130))
redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes >"$WORK/create.log"
for _ in $(seq 100); do
	redis-cli -p $((BASE + 100)) cluster info | grep -q cluster_state:ok && break; sleep 0.2
done
sleep 2 # the replicas finish their first sync
nice -n 10 "$WORK/shardnode" compare --label redis-server --duration "$DURATION" --down-after ${DOWN_AFTER_MS}ms \
	--cluster 127.0.0.1:$((BASE + 100)) --disruptive --grow-node 127.0.0.1:$((BASE + 130)) \
	--out "$OUT/cluster" | tee "$OUT-cluster.txt"
mv "$OUT-presharding.txt" "$OUT/presharding.txt"; mv "$OUT-cluster.txt" "$OUT/cluster.txt"
