#!/usr/bin/env bash
# Cluster-mode throughput: redis-benchmark --cluster against a 3-master
# shardnode cluster and a 3-master redis-server cluster (no replicas, both
# at their default settings as a user starts them), alternating rounds in
# one run; SET and GET, unpipelined and -P 16, CLIENTS clients. Prints the
# median ops/s and p99 per test and the shardnode/redis ratios.
#
#   scripts/bench-cluster.sh
#   ROUNDS=5 REQUESTS=500000 scripts/bench-cluster.sh
set -euo pipefail
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-50}
REQUESTS=${REQUESTS:-300000}
PIPELINES=${PIPELINES:-"1 16"}
TESTS=${TESTS:-set,get}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null; rm -rf "$work"' EXIT
(cd "$here" && go build -o "$work/shardnode" ./cmd/shardnode)

start() { # kind baseport
  local kind=$1 base=$2 bin=redis-server addrs=()
  [ "$kind" = shardnode ] && bin="$work/shardnode"
  for i in 0 1 2; do
    local p=$((base + i)) d="$work/$kind/$((base + i))"
    mkdir -p "$d"
    "$bin" --port "$p" --cluster-enabled yes --cluster-config-file "$d/nodes.conf" --dir "$d" \
      --save "" --appendonly no --loglevel warning >"$d/log" 2>&1 &
    pids+=($!)
    addrs+=("127.0.0.1:$p")
  done
  for i in 0 1 2; do
    for _ in $(seq 100); do redis-cli -p $((base + i)) ping >/dev/null 2>&1 && break; sleep 0.1; done
  done
  redis-cli --cluster create "${addrs[@]}" --cluster-yes >"$work/$kind.create" 2>&1
  for _ in $(seq 200); do
    local ok=1
    for i in 0 1 2; do
      redis-cli -p $((base + i)) cluster info | grep -q cluster_state:ok || ok=0
    done
    [ $ok = 1 ] && return 0
    sleep 0.1
  done
  echo "$kind cluster did not reach cluster_state:ok" >&2
  exit 1
}
start redis 33000
start shardnode 33100

echo "machine: $(nproc) cores; redis-server $(redis-server --version | awk '{print $3}'); clients=$CLIENTS requests=$REQUESTS rounds=$ROUNDS load: $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$work/results.csv"
for r in $(seq "$ROUNDS"); do
  for P in $PIPELINES; do
    for kind in redis shardnode; do
      port=33000
      [ "$kind" = shardnode ] && port=33100
      redis-benchmark --cluster -p "$port" -c "$CLIENTS" -n "$REQUESTS" -P "$P" -t "$TESTS" -r 100000 --csv 2>/dev/null |
        grep -v '^"test"' | tr -d '"' | awk -F, -v k="$kind" -v p="$P" -v r="$r" '{print k","p","r","$1","$2","$7}' >>"$work/results.csv"
    done
  done
done
awk -F, '
  { key=$1","$2","$4; n[key]++; ops[key, n[key]]=$5; p99[key, n[key]]=$6; tests[$2","$4]=1 }
  function med(arr, key, c,   i, j, t, v) {
    for (i = 1; i <= c; i++) v[i] = arr[key, i]
    for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return v[int((c + 1) / 2)]
  }
  END {
    printf "%-4s %-6s %12s %12s %7s %9s %9s\n", "P", "test", "redis ops/s", "shard ops/s", "ratio", "redis p99", "shard p99"
    for (t in tests) {
      split(t, a, ","); rk = "redis," t; sk = "shardnode," t
      ro = med(ops, rk, n[rk]); so = med(ops, sk, n[sk])
      printf "%-4s %-6s %12.0f %12.0f %7.2f %9.3f %9.3f\n", a[1], a[2], ro, so, so / ro, med(p99, rk, n[rk]), med(p99, sk, n[sk])
    }
  }' "$work/results.csv" | sort
