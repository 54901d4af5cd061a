#!/usr/bin/env bash
# BGSAVE benchmark (not run in CI): shardnode vs redis-server on the same
# machine, same data.
#
#   scripts/bench-bgsave.sh [-k KEYS] [-d VALUE_BYTES] [-p PORT] [-S] [-r ROUNDS]
#
# -S runs shardnode only (no redis-server row), for iterating.
# -r ROUNDS alternates baseline and during-save benchmarks ROUNDS times
# (400000/ROUNDS requests each) and reports the median p99 of each: on a
# shared machine a baseline taken minutes before the saves can be off by
# 2-4x (default 1).
#
# For each server: load KEYS string keys, then
#   - baseline: redis-benchmark GET/SET p99 with no save running, with the
#     save driver's INFO poll running as during the saves (BASELINE_POLL=0:
#     without it, as before 2026-11-30 17:40 UTC);
#   - during save: the same benchmark while BGSAVEs run back to back;
#     their count and mean time, extra memory (peak RSS of the server and
#     its fork children during the saves minus RSS before);
#   - one BGSAVE alone (no benchmark running): its time;
#   - start-up load time of the written dump.rdb (until PING answers and
#     INFO says loading:0).
# Prints one table row per server (markdown) for docs/BENCHMARKS.md.
#
# The saves are started and watched by scripts/bgsavedriver on one
# connection (BGSAVE, then INFO persistence every 20 ms), which also samples
# the RSS. (Until 2026-11-30 this was a shell loop spawning redis-cli, grep
# and sleep ~150 times a second: on 2 cores the spawns alone, with no save,
# raised shardnode's p99 from ~1-4 ms to ~8 ms, for both servers; then a
# python3 process, whose wake-ups alone raised it from ~1.0 to ~2.1 ms.)
set -eu
keys=1000000
size=64
port=21196
only_shardnode=""
rounds=1
while getopts "k:d:p:Sr:" o; do
  case $o in
    k) keys=$OPTARG ;;
    d) size=$OPTARG ;;
    p) port=$OPTARG ;;
    S) only_shardnode=1 ;;
    r) rounds=$OPTARG ;;
    *) exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
(cd "$here" && go build -o "$work/shardnode-bin" ./cmd/shardnode && go build -o "$work/bgsavedriver" ./scripts/bgsavedriver)
cli() { redis-cli -p "$port" "$@"; }

rss_kb() { # RSS of pid and its children, in kB
  local total=0 p r
  for p in "$1" $(pgrep -P "$1" || true); do
    r=$(awk '/VmRSS/{print $2}' "/proc/$p/status" 2>/dev/null || true)
    total=$((total + ${r:-0}))
  done
  echo "$total"
}

# IO_THREADS (default 1, as in bench-vs-redis.sh) is passed to both servers
# as --io-threads; empty leaves both at their default.
IO_THREADS=${IO_THREADS-1}
BASELINE_POLL=${BASELINE_POLL-1}
threads=()
[ -n "$IO_THREADS" ] && threads=(--io-threads "$IO_THREADS")

start() { # server-binary dir
  "$1" --port "$port" --bind 127.0.0.1 --save "" --dir "$2" --appendonly no --loglevel warning "${threads[@]}" >"$2/log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    if cli ping >/dev/null 2>&1 && cli info persistence | grep -q '^loading:0'; then return; fi
    sleep 0.05
  done
  echo "server did not start" >&2
  exit 1
}

# saver BENCH_PID [poll]: BGSAVEs back to back while BENCH_PID runs (0: one
# save); prints "saves mean_ms peak_rss_kb" (server and its children).
# With "poll" it starts no save and only sends the same INFO persistence
# every 20 ms: the baseline runs with it, so that the two benchmarks differ
# by the saves alone. The driver is scripts/bgsavedriver (Go, one
# connection); until 2026-11-30 17:40 UTC it was a python3 process, whose
# wake-ups alone, with no save, took shardnode's p99 from ~1.0 to ~2.1 ms.
saver() {
  local mode=()
  [ "${2:-}" = poll ] && mode=(-poll)
  "$work/bgsavedriver" -addr "127.0.0.1:$port" -server-pid "$pid" -while-pid "$1" "${mode[@]}"
}

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

p99() { # redis-benchmark CSV -> max p99 over the tests (ms)
  awk -F, 'NR>1 {gsub(/"/,"",$7); if ($7+0 > m) m = $7+0} END {print m}'
}

bench() { redis-benchmark -p "$port" -t set,get -n "$1" -c 50 -r "$keys" -d "$size" --csv 2>/dev/null; }

row() { # name binary
  local name=$1 bin=$2 dir="$work/$1"
  mkdir -p "$dir"
  start "$bin" "$dir"
  awk -v n="$keys" -v d="$size" 'BEGIN { v = sprintf("%0" d "d", 0); for (i = 0; i < n; i++) { k = "key:" sprintf("%012d", i); printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", length(k), k, length(v), v } }' | cli --pipe >/dev/null
  local base_p99 before during_p99 save_ms load_ms t0 t1 saves=0 during_ms=0 peak=0 n_req r
  local bases=() durings=() s m pk
  n_req=$((400000 / rounds))
  before=$(rss_kb "$pid")
  for r in $(seq "$rounds"); do
    bench "$n_req" >"$dir/base.csv" &
    local bpid=$!
    if [ "$BASELINE_POLL" = 1 ]; then
      read -r _ _ _ < <(saver "$bpid" poll)
    fi
    wait "$bpid" || true
    bases+=("$(p99 <"$dir/base.csv")")
    bench "$n_req" >"$dir/during.csv" &
    bpid=$!
    read -r s m pk < <(saver "$bpid")
    wait "$bpid" || true
    durings+=("$(p99 <"$dir/during.csv")")
    during_ms=$(((during_ms * saves + m * s) / (saves + s > 0 ? saves + s : 1)))
    saves=$((saves + s))
    [ "$pk" -gt "$peak" ] && peak=$pk
  done
  base_p99=$(median "${bases[@]}")
  during_p99=$(median "${durings[@]}")
  [ "$rounds" -gt 1 ] && echo "rounds: baseline p99 ${bases[*]}; during ${durings[*]}" >&2
  # One more save alone for a clean timing and the file to load.
  read -r _ save_ms _ < <(saver 0)
  kill "$pid"; wait "$pid" 2>/dev/null || true
  t0=$(date +%s%N)
  start "$bin" "$dir"
  t1=$(date +%s%N)
  load_ms=$(((t1 - t0) / 1000000))
  local n; n=$(cli dbsize)
  kill "$pid"; wait "$pid" 2>/dev/null || true
  pid=""
  printf '| %s | %s | %d | %d | %d | %d | %s | %s | %d | %s |\n' "$name" "$keys" "$save_ms" "$saves" "$during_ms" \
    $(((peak - before) / 1024)) "$base_p99" "$during_p99" "$load_ms" "$n"
}

echo "| server | keys | BGSAVE ms (alone) | saves during bench | BGSAVE ms during bench (mean) | extra MB (peak) | p99 ms baseline | p99 ms during BGSAVE | load ms | keys loaded |"
echo "|---|---|---|---|---|---|---|---|---|---|"
row shardnode "$work/shardnode-bin"
[ -n "$only_shardnode" ] || row redis-server "$(command -v redis-server)"
