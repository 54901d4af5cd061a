#!/usr/bin/env bash
# Scripting benchmark (not run in CI): redis-benchmark EVALSHA against
# shardnode and redis-server on the same machine, in one run.
#
#   scripts/bench-scripting.sh [-n REQUESTS] [-c CLIENTS] [-p PORT] [-r ROUNDS]
#
# Two scripts, each unpipelined and with -P 16:
#   one-command  return redis.call('GET', KEYS[1])
#   lock-release if redis.call('GET', KEYS[1]) == ARGV[1] then
#                  return redis.call('DEL', KEYS[1]) else return 0 end
#                (redsync's unlock; the key holds ARGV[1] before the run
#                and is deleted by the first call, later calls compare and
#                return 0, as a release of a lock someone else took)
# The servers alternate ROUNDS times (default 3); each row is the median
# requests/s and the median server CPU time per request (user + system,
# from /proc: unlike throughput, it does not depend on what else the
# machine runs). Prints markdown rows for docs/BENCHMARKS.md.
#
#   scripts/bench-scripting.sh -g [-n REQUESTS] [-c CLIENTS]
#
# -g counts instructions instead: each server runs once under valgrind
# --tool=callgrind (shardnode with GODEBUG=asyncpreemptoff=1, which
# callgrind needs), instrumentation on only while redis-benchmark runs (after
# a warm-up of 2000 requests), and each row is the server's user-space
# instructions per request, a figure that does not depend on the machine's
# load at all (it leaves out the kernel and cache misses). Defaults there:
# 20000 requests, 4 clients.
set -eu
requests=200000
clients=50
port=21197
rounds=3
callgrind=""
nset="" cset=""
while getopts "n:c:p:r:g" o; do
  case $o in
    n) requests=$OPTARG nset=1 ;;
    c) clients=$OPTARG cset=1 ;;
    p) port=$OPTARG ;;
    r) rounds=$OPTARG ;;
    g) callgrind=1 ;;
    *) exit 2 ;;
  esac
done
if [ -n "$callgrind" ]; then
  [ -n "$nset" ] || requests=20000
  [ -n "$cset" ] || clients=4
fi
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
(cd "$here" && go build -o "$work/shardnode.bin" ./cmd/shardnode)
one="return redis.call('GET', KEYS[1])"
rel="if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end"

start() { # start SERVER and wait for PING
  if [ -n "$callgrind" ]; then
    local bin=/usr/bin/redis-server
    [ "$1" = shardnode ] && bin="$work/shardnode.bin"
    rm -f "$work"/callgrind.out*
    GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/callgrind.out" \
      "$bin" --port "$port" --bind 127.0.0.1 --save "" --dir "$work" --loglevel warning >"$work/server.log" 2>&1 &
    pid=$!
    for _ in $(seq 600); do redis-cli -p "$port" ping >/dev/null 2>&1 && return; sleep 0.1; done
    echo "server did not start under valgrind" >&2
    exit 1
  fi
  if [ "$1" = shardnode ]; then
    "$work/shardnode.bin" --port "$port" --bind 127.0.0.1 --save "" --dir "$work" --loglevel warning >"$work/server.log" 2>&1 &
  else
    redis-server --port "$port" --bind 127.0.0.1 --save "" --dir "$work" --loglevel warning >"$work/server.log" 2>&1 &
  fi
  pid=$!
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && return; sleep 0.05; done
  echo "server did not start" >&2
  exit 1
}
stop() { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; pid=""; }

cpu_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }

bench() { # SERVER SCRIPT PIPELINE -> "requests/s server-CPU-us-per-request"
  local sha t0 t1 rps
  redis-cli -p "$port" set lock:key token >/dev/null
  sha=$(redis-cli -p "$port" script load "$2")
  t0=$(cpu_ticks)
  rps=$(redis-benchmark -p "$port" -c "$clients" -n "$requests" -P "$3" --csv \
    evalsha "$sha" 1 lock:key token 2>/dev/null | tail -1 | awk -F'"' '{print $4}')
  t1=$(cpu_ticks)
  echo "$rps $(awk -v d=$((t1 - t0)) -v n="$requests" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f", d * 1e6 / hz / n}')"
}

instructions() { # SERVER SCRIPT PIPELINE -> instructions per request
  local sha total
  start "$1"
  redis-cli -p "$port" set lock:key token >/dev/null
  sha=$(redis-cli -p "$port" script load "$2")
  redis-benchmark -p "$port" -c "$clients" -n 2000 -P "$3" evalsha "$sha" 1 lock:key token >/dev/null 2>&1
  callgrind_control -i on "$pid" >/dev/null 2>&1
  redis-benchmark -p "$port" -c "$clients" -n "$requests" -P "$3" evalsha "$sha" 1 lock:key token >/dev/null 2>&1
  callgrind_control -i off "$pid" >/dev/null 2>&1
  stop
  total=$(cat "$work"/callgrind.out* | awk '$1 == "totals:" {s += $2} END {print s + 0}')
  awk -v t="$total" -v n="$requests" 'BEGIN {printf "%.0f", t / n}'
}

if [ -n "$callgrind" ]; then
  echo "| script | pipeline | redis-server instructions/req | shardnode instructions/req | ratio |"
  echo "| --- | --- | --- | --- | --- |"
  for s in one rel; do
    script=$one name="one-command (GET)"
    [ "$s" = rel ] && script=$rel name="lock release (GET + compare + DEL)"
    for p in 1 16; do
      ri=$(instructions redis "$script" "$p")
      si=$(instructions shardnode "$script" "$p")
      echo "| $name | $p | $ri | $si | $(awk -v a="$si" -v b="$ri" 'BEGIN {printf "%.2f", a / b}') |"
    done
  done
  exit 0
fi

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

declare -A res cpu
for r in $(seq "$rounds"); do
  for server in redis shardnode; do
    start "$server"
    for s in one rel; do
      for p in 1 16; do
        script=$one
        [ "$s" = rel ] && script=$rel
        read -r rps us <<<"$(bench "$server" "$script" "$p")"
        res[$server.$s.$p]+="$rps "
        cpu[$server.$s.$p]+="$us "
      done
    done
    stop
  done
done
echo "| script | pipeline | redis-server req/s | shardnode req/s | ratio | redis-server CPU µs/req | shardnode CPU µs/req |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for s in one rel; do
  for p in 1 16; do
    rv=$(echo "${res[redis.$s.$p]}" | tr ' ' '\n' | grep . | median)
    sv=$(echo "${res[shardnode.$s.$p]}" | tr ' ' '\n' | grep . | median)
    name="one-command (GET)"
    [ "$s" = rel ] && name="lock release (GET + compare + DEL)"
    ratio=$(awk -v a="$sv" -v b="$rv" 'BEGIN {printf "%.2f", a / b}')
    rc=$(echo "${cpu[redis.$s.$p]}" | tr ' ' '\n' | grep . | median)
    sc=$(echo "${cpu[shardnode.$s.$p]}" | tr ' ' '\n' | grep . | median)
    echo "| $name | $p | $rv | $sv | $ratio | $rc | $sc |"
  done
done
