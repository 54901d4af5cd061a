#!/usr/bin/env bash
# Streams against redis-server in one run (issue 29 must-show 4): XADD with
# redis-benchmark, and XREADGROUP + XACK with scripts/streambench (consumers
# of one group draining a stream of N entries). For each server it prints
# the rate and the server's CPU (utime+stime from /proc) per operation,
# which, unlike the rate, does not depend on the machine's load.
#
#   scripts/bench-streams.sh [N]      (default 200000)
set -eu
n=${1:-200000}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
(cd "$here" && go build -o "$work/shardnode" ./cmd/shardnode && go build -o "$work/streambench" ./scripts/streambench)
tck=$(getconf CLK_TCK)
cpu() { awk -v t="$tck" '{print ($14+$15)/t}' "/proc/$1/stat"; }
echo "machine: $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg), N=$n"
port=22811
for server in redis-server shardnode; do
  if [ $server = redis-server ]; then
    redis-server --port $port --bind 127.0.0.1 --save "" --appendonly no --dir "$work" >"$work/srv.log" 2>&1 &
  else
    "$work/shardnode" --port $port --bind 127.0.0.1 --save "" --dir "$work" >"$work/srv.log" 2>&1 &
  fi
  pid=$!
  for _ in $(seq 50); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-benchmark -p $port -c 50 -n 20000 -P 16 -q XADD warm '*' f v >/dev/null
  c0=$(cpu $pid)
  rate=$(redis-benchmark -p $port -c 50 -n "$n" -P 16 -q XADD bench:xadd '*' f v | tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1)
  c1=$(cpu $pid)
  echo "$server XADD -P 16: $rate, cpu/op $(echo "($c1-$c0)*1000000/$n" | bc -l | cut -c1-5) us"
  "$work/streambench" -addr 127.0.0.1:$port -mode fill -n "$n"
  c0=$(cpu $pid)
  out=$("$work/streambench" -addr 127.0.0.1:$port -mode consume -c 8 -count 10)
  c1=$(cpu $pid)
  echo "$server XREADGROUP COUNT 10 + XACK, 8 consumers: $out, cpu/entry $(echo "($c1-$c0)*1000000/$n" | bc -l | cut -c1-5) us"
  kill $pid; wait $pid 2>/dev/null || true
done
