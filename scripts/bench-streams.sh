#!/usr/bin/env bash
# Streams, HyperLogLog and geo against redis-server in one run (issue 29
# must-show 4): XADD, PFADD, PFCOUNT of 3 keys and GEOSEARCH BYRADIUS on
# 100k members with redis-benchmark, XREADGROUP + XACK with
# scripts/streambench (8 consumers of one group draining a stream of N
# entries). For each server it records the rate and the server's CPU
# (user and kernel, from /proc) per operation, which, unlike the rate, does not
# depend on the machine's load, and prints a table with the ratios to
# redis-server (rate: shardnode/redis, CPU: redis/shardnode; above 1 is
# better for shardnode in both).
#
#   scripts/bench-streams.sh [N]      (default 200000)
#
# The servers run side by side for the whole run, on PORT (default 22811)
# and the ports after it, and each test runs on one after the other.
#
# OLD=/path/to/shardnode adds a third server (another build) to the same
# run, for before/after comparisons. CALLGRIND=1 runs every server under
# valgrind --tool=callgrind instead and reports user-space instructions per
# operation (the same whatever else the machine runs; kernel time is not
# in them), with N/10 operations (N/400 for PFCOUNT and GEOSEARCH).
#
# MEM=1 measures stream memory instead (issue 29): per server, N XADDs
# (-c 50 -P 16) of `f v` to one key and of five fields of 10-byte values
# to another, reporting used_memory and RSS after each fill (and after
# MEMORY PURGE, which on shardnode collects garbage; redis-server's
# used_memory does not change with it) and the minor page faults the
# server took during the first fill (/proc/PID/task/*/stat field 10).
set -eu
n=${1:-200000}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
(cd "$here" && go build -o "$work/shardnode" ./cmd/shardnode && go build -o "$work/streambench" ./scripts/streambench)
# cpu PID: the server's CPU time in seconds, user and kernel, with
# nanosecond resolution: the sum of its threads' on-CPU time from
# /proc/PID/task/*/schedstat. (utime+stime of /proc/PID/stat count in
# ticks of 10 ms, which is 12 % of a 200,000-op PFADD test.) A thread that
# exits between two readings takes its time with it; neither server ends
# threads while it serves these tests.
cpu() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.6f\n", s / 1e9}'; }
echo "machine: $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg), N=$n, $(date -u +%Y-%m-%dT%H:%MZ)"
port=${PORT:-22811}
servers="redis-server shardnode"
if [ -n "${OLD:-}" ]; then servers="$servers old"; fi

# measure SERVER PID LABEL OPS CMD...: runs CMD, records rate and CPU per
# op (with CALLGRIND, instructions per op).
measure() {
  if [ -n "${CALLGRIND:-}" ]; then
    local server=$1 vpid=$2 label=$3 ops=$4
    callgrind_control -z "$vpid" >/dev/null
    shift 4
    "$@" >/dev/null
    callgrind_control -d "$vpid" >/dev/null
    sleep 1
    local ir
    ir=$(grep -h "^summary" $(ls -t "$work"/cg.out."$vpid"* | head -1) | awk "{print \$2}")
    echo "$label|$ir" | awk -F'|' -v ops="$ops" '{printf "%s|%d\n", $1, $2/ops}' >>"$work/res.$server"
    return
  fi
  local server=$1 pid=$2 label=$3 ops=$4
  shift 4
  local c0 c1 out rate
  c0=$(cpu "$pid")
  out=$("$@" | tr '\r' '\n')
  c1=$(cpu "$pid")
  rate=$(echo "$out" | grep -o '[0-9.]* requests per second\|entries/s=[0-9.]*' | tail -1 | grep -o '[0-9.]*' | head -1)
  echo "$label|$rate|$(echo "($c1-$c0)*1000000/$ops" | bc -l)" >>"$work/res.$server"
}

sb() { "$work/streambench" -addr 127.0.0.1:$p "$@"; }
big=$n small=$((n / 10))
vg=()
rm -f "$work"/cg.out.*
if [ -n "${CALLGRIND:-}" ]; then
  big=$((n / 10)) small=$((n / 400))
  # Go's asynchronous preemption signals trip callgrind.
  export GODEBUG=asyncpreemptoff=1
fi
# Every server runs for the whole run, and each test runs on them one
# after the other, so that a change of the machine's load between tests
# hits every server alike.
declare -A pid sport
i=0
[ -n "${CALLGRIND:-}" ] && vg=(valgrind --tool=callgrind "--callgrind-out-file=$work/cg.out.%p")
for server in $servers; do
  p=$((port + i))
  i=$((i + 1))
  case $server in
    redis-server) "${vg[@]}" redis-server --port $p --bind 127.0.0.1 --save "" --appendonly no --dir "$work" >"$work/srv.$server.log" 2>&1 & ;;
    shardnode) "${vg[@]}" "$work/shardnode" --port $p --bind 127.0.0.1 --save "" --dir "$work" >"$work/srv.$server.log" 2>&1 & ;;
    old) "${vg[@]}" "$OLD" --port $p --bind 127.0.0.1 --save "" --dir "$work" >"$work/srv.$server.log" 2>&1 & ;;
  esac
  pid[$server]=$!
  sport[$server]=$p
done
for server in $servers; do
  for _ in $(seq 600); do redis-cli -p ${sport[$server]} ping >/dev/null 2>&1 && break; sleep 0.1; done
done
# each CMD...: runs CMD with $p set to every server's port in turn.
each() {
  for server in $servers; do
    p=${sport[$server]}
    eval "$@"
  done
}
# m LABEL OPS CMD...: measure on every server in turn ($p its port).
m() {
  local label=$1 ops=$2
  shift 2
  for server in $servers; do
    p=${sport[$server]}
    measure $server ${pid[$server]} "$label" "$ops" "$@"
  done
}
rb() { redis-benchmark -p $p -c 50 -q "$@"; }
if [ -n "${MEM:-}" ]; then
  minflt() { cat /proc/"$1"/task/*/stat 2>/dev/null | awk '{s += $10} END {print s}'; }
  mem() { redis-cli -p $p info memory | tr -d '\r' | awk -F: '$1 == "used_memory" {print $2}'; }
  rss() { awk '$1 == "VmRSS:" {print $2 * 1024}' /proc/"$1"/status; }
  printf '| server | fill | entries | used_memory before | used_memory after | B/entry | after MEMORY PURGE | B/entry | RSS after | minor faults |\n|---|---|---|---|---|---|---|---|---|---|\n'
  v=aaaaaaaaaa
  for server in $servers; do
    p=${sport[$server]}
    for fill in "f v" "f1 $v f2 $v f3 $v f4 $v f5 $v"; do
      key="mem:$(echo "$fill" | wc -w)"
      redis-cli -p $p memory purge >/dev/null
      m0=$(mem) f0=$(minflt ${pid[$server]})
      rb -n "$n" -P 16 XADD "$key" '*' $fill >/dev/null
      f1=$(minflt ${pid[$server]}) m1=$(mem)
      redis-cli -p $p memory purge >/dev/null
      m2=$(mem)
      e=$(redis-cli -p $p xlen "$key")
      printf '| %s | `%s` | %d | %.1f MB | %.1f MB | %.1f | %.1f MB | %.1f | %.1f MB | %d |\n' "$server" "$fill" "$e" \
        "$(echo "$m0/1000000" | bc -l)" "$(echo "$m1/1000000" | bc -l)" "$(echo "($m1-$m0)/$e" | bc -l)" \
        "$(echo "$m2/1000000" | bc -l)" "$(echo "($m2-$m0)/$e" | bc -l)" "$(echo "$(rss ${pid[$server]})/1000000" | bc -l)" $((f1 - f0))
      redis-cli -p $p del "$key" >/dev/null
    done
  done
  exit 0
fi
each 'rb -n 20000 -P 16 XADD warm "*" f v >/dev/null'
m "XADD -P 16" "$big" rb -n "$big" -P 16 XADD bench:xadd '*' f v
each '"$work/streambench" -addr 127.0.0.1:$p -mode fill -n "$big"'
m "XREADGROUP COUNT 10 + XACK, 8 consumers (per entry)" "$big" \
  sb -mode consume -c 8 -count 10
m "PFADD -P 16 (-r 1000000)" "$big" rb -n "$big" -P 16 -r 1000000 PFADD bench:pfadd __rand_int__
each '"$work/streambench" -addr 127.0.0.1:$p -mode hllfill -n 20000 -key bench:hll'
m "PFCOUNT of 3 dense keys -P 16" $small rb -n $small -P 16 PFCOUNT bench:hll1 bench:hll2 bench:hll3
each '"$work/streambench" -addr 127.0.0.1:$p -mode geofill -n 100000 -key bench:geo'
m "GEOSEARCH BYRADIUS 20 km on 100k members (~130 found) -P 16" $small \
  rb -n $small -P 16 GEOSEARCH bench:geo FROMLONLAT 15 40 BYRADIUS 20 km ASC
for server in $servers; do
  kill ${pid[$server]}
  wait ${pid[$server]} 2>/dev/null || true
done

if [ -n "${CALLGRIND:-}" ]; then
  printf '\n| test (server) | redis-server instructions/op | its instructions/op | ratio (redis/it) |\n|---|---|---|---|\n'
  for other in $servers; do
    [ $other = redis-server ] && continue
    paste -d'|' "$work/res.redis-server" "$work/res.$other" | while IFS='|' read -r label i1 _ i2; do
      printf '| %s (%s) | %d | %d | %.2f |\n' "$label" "$other" "$i1" "$i2" "$(echo "$i1/$i2" | bc -l)"
    done
  done
  exit 0
fi
printf '\n| test | redis-server /s | shardnode /s | rate ratio | redis-server CPU/op | shardnode CPU/op | CPU ratio |\n|---|---|---|---|---|---|---|\n'
for other in $servers; do
  [ $other = redis-server ] && continue
  paste -d'|' "$work/res.redis-server" "$work/res.$other" | while IFS='|' read -r label r1 c1 _ r2 c2; do
    [ $other = old ] && label="$label (old build)"
    printf '| %s | %.0f | %.0f | %.2f | %.2f µs | %.2f µs | %.2f |\n' "$label" "$r1" "$r2" "$(echo "$r2/$r1" | bc -l)" "$c1" "$c2" "$(echo "$c1/$c2" | bc -l)"
  done
done
