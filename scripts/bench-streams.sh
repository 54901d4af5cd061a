#!/usr/bin/env bash
# Streams, HyperLogLog and geo against redis-server in one run (issue 29
# must-show 4): XADD, PFADD, PFCOUNT of 3 keys and GEOSEARCH BYRADIUS on
# 100k members with redis-benchmark, XREADGROUP + XACK with
# scripts/streambench (8 consumers of one group draining a stream of N
# entries). For each server it records the rate and the server's CPU
# (utime+stime from /proc) per operation, which, unlike the rate, does not
# depend on the machine's load, and prints a table with the ratios to
# redis-server (rate: shardnode/redis, CPU: redis/shardnode; above 1 is
# better for shardnode in both).
#
#   scripts/bench-streams.sh [N]      (default 200000)
#
# OLD=/path/to/shardnode adds a third server (another build) to the same
# run, for before/after comparisons.
set -eu
n=${1:-200000}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
(cd "$here" && go build -o "$work/shardnode" ./cmd/shardnode && go build -o "$work/streambench" ./scripts/streambench)
tck=$(getconf CLK_TCK)
cpu() { awk -v t="$tck" '{print ($14+$15)/t}' "/proc/$1/stat"; }
echo "machine: $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg), N=$n, $(date -u +%Y-%m-%dT%H:%MZ)"
port=22811
servers="redis-server shardnode"
if [ -n "${OLD:-}" ]; then servers="$servers old"; fi

# measure SERVER PID LABEL OPS CMD...: runs CMD, records rate and CPU per op.
measure() {
  local server=$1 pid=$2 label=$3 ops=$4
  shift 4
  local c0 c1 out rate
  c0=$(cpu "$pid")
  out=$("$@" | tr '\r' '\n')
  c1=$(cpu "$pid")
  rate=$(echo "$out" | grep -o '[0-9.]* requests per second\|entries/s=[0-9.]*' | tail -1 | grep -o '[0-9.]*' | head -1)
  echo "$label|$rate|$(echo "($c1-$c0)*1000000/$ops" | bc -l)" >>"$work/res.$server"
}

for server in $servers; do
  case $server in
    redis-server) redis-server --port $port --bind 127.0.0.1 --save "" --appendonly no --dir "$work" >"$work/srv.log" 2>&1 & ;;
    shardnode) "$work/shardnode" --port $port --bind 127.0.0.1 --save "" --dir "$work" >"$work/srv.log" 2>&1 & ;;
    old) "$OLD" --port $port --bind 127.0.0.1 --save "" --dir "$work" >"$work/srv.log" 2>&1 & ;;
  esac
  pid=$!
  for _ in $(seq 50); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.1; done
  rb() { redis-benchmark -p $port -c 50 -q "$@"; }
  rb -n 20000 -P 16 XADD warm '*' f v >/dev/null
  measure $server $pid "XADD -P 16" "$n" rb -n "$n" -P 16 XADD bench:xadd '*' f v
  "$work/streambench" -addr 127.0.0.1:$port -mode fill -n "$n"
  measure $server $pid "XREADGROUP COUNT 10 + XACK, 8 consumers (per entry)" "$n" \
    "$work/streambench" -addr 127.0.0.1:$port -mode consume -c 8 -count 10
  measure $server $pid "PFADD -P 16 (-r 1000000)" "$n" rb -n "$n" -P 16 -r 1000000 PFADD bench:pfadd __rand_int__
  "$work/streambench" -addr 127.0.0.1:$port -mode hllfill -n 20000 -key bench:hll
  measure $server $pid "PFCOUNT of 3 dense keys -P 16" $((n / 10)) rb -n $((n / 10)) -P 16 PFCOUNT bench:hll1 bench:hll2 bench:hll3
  "$work/streambench" -addr 127.0.0.1:$port -mode geofill -n 100000 -key bench:geo
  measure $server $pid "GEOSEARCH BYRADIUS 20 km on 100k members (~130 found) -P 16" $((n / 10)) \
    rb -n $((n / 10)) -P 16 GEOSEARCH bench:geo FROMLONLAT 15 40 BYRADIUS 20 km ASC
  kill $pid
  wait $pid 2>/dev/null || true
done

printf '\n| test | redis-server /s | shardnode /s | rate ratio | redis-server CPU/op | shardnode CPU/op | CPU ratio |\n|---|---|---|---|---|---|---|\n'
for other in $servers; do
  [ $other = redis-server ] && continue
  paste -d'|' "$work/res.redis-server" "$work/res.$other" | while IFS='|' read -r label r1 c1 _ r2 c2; do
    [ $other = old ] && label="$label (old build)"
    printf '| %s | %.0f | %.0f | %.2f | %.2f µs | %.2f µs | %.2f |\n' "$label" "$r1" "$r2" "$(echo "$r2/$r1" | bc -l)" "$c1" "$c2" "$(echo "$c1/$c2" | bc -l)"
  done
done
