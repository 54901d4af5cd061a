#!/usr/bin/env bash
# Key-by-key resharding (redis-cli --cluster reshard / rebalance, i.e.
# SETSLOT IMPORTING/MIGRATING, GETKEYSINSLOT, MIGRATE ... KEYS, ASK) with a
# 3-master redis-server cluster and a 3-master shardnode cluster, one after
# the other in one run (not CI: minutes, gigabytes).
#
#   scripts/bench-reshard.sh            # all three parts
#   PARTS=load scripts/bench-reshard.sh # one part: load, small, big
#
# load:  100,000 counters, 16 go-redis ClusterClient writers INCRementing
#        them, `reshard` of 3000 slots from the first master to the second,
#        then `rebalance`; every acknowledged increment must be there, every
#        key, and `--cluster check` must pass. Prints the reshard and
#        rebalance times.
# small: 1,000,000 keys of 100 bytes; `reshard` of 3000 slots; keys/s
#        moved and the p99 of GETs of keys in unmoved slots (3000-10922:
#        the source's remaining slots and the target's) during the move.
# big:   20 keys of 50 MB in the moved slots (plus the probe keys); the
#        same figures.
#
# wholeslot: the small part's data, moved key by key on redis-server and by
#        whole-slot migration (CLUSTER MIGRATION IMPORT of the same 3000
#        slots on the second master) on shardnode: issue 23's
#        "whole-slot at least 10x redis-server's key-by-key rate". Also
#        prints the CPU seconds the servers (server_cpu_s) and redis-cli
#        or the polling (client_cpu_s) spent on the move, which the
#        machine's load does not change; WHOLESLOT_PROBE=1000 adds the
#        probe (whose GETs then count in server_cpu_s).
#
# idle: the load part's 100,000 counters and 16 writers for IDLE_S seconds
#        (default 8) with no move: the writers' acknowledged INCRs measure
#        the data path alone.
# steps: the small part's data (VALUES keys, no probe unless PROBE is
#        set) moved by scripts/reshardload itself with redis-cli's command
#        sequence, one command at a time; prints each command's count and
#        client-side mean, p50, p99, max and share of the move's time
#        (importing, migrating, getkeys, migrate, getkeys_empty,
#        node_target, node_source, node_other). STEP_CPU=1 adds per
#        command the three servers' CPU microseconds and the times their
#        threads were put on a CPU (from /proc/<pid>/task/*/schedstat,
#        read by the driver around each command; work a command leaves
#        for after its reply counts in the next one).
#
# KINDS picks the servers (default "redis shardnode"); the kind
# shardnode-old runs the binary $SHARDNODE_OLD (a build of an older
# commit), for a before/after in the same run.
# PROBE sets the small and big parts' probe keys (default 1000; 0: no probe);
# PROBE_RATE its GETs per second (default 0: back to back, so a server
# that answers faster serves more of them during the move; a rate gives
# both servers the same probe load; the line then also gives
# probe_due_p99_ms and probe_due_p999_ms, latencies counted from when each
# GET was due, so the GETs a stall held back count it too).
# PIPELINE is redis-cli's --cluster-pipeline (keys per MIGRATE, default 10
# as redis-cli's); VALUES scales the small part down (default 1,000,000).
# PERF=<dir> records the three servers with `perf record -g $PERF_OPTS`
# (default "-F 999"; "-e sched:sched_switch -c 1" records where the
# threads leave the CPU) while the driver runs (load and move) into
# <dir>/<part>-<kind>.data; with PERF_STAT=1, `perf stat` counts
# (task-clock, context switches, migrations, page faults, or the
# PERF_STAT_EVENTS) into
# <dir>/<part>-<kind>.stat instead.
# SHARDNODE_ARGS adds arguments to the shardnode kinds' command line (for
# example "--io-threads 2").
# TRACE=<dir> (shardnode kinds) starts the servers with
# enable-debug-command and wraps the small and big parts' move in DEBUG
# TRACE START/STOP on each of the three, into
# <dir>/<part>-<kind>-<port>.trace (Go execution traces, for
# scripts/traceprobe); tracing costs CPU, so such a run's figures are not
# the ones to compare. The driver then also writes the probe GETs of 1 ms
# or more (SLOW_MS, a Go duration, default 1ms) to <dir>/<part>-<kind>.slow.
# PROFILE=<dir> (shardnode kinds) likewise wraps the move in DEBUG PROFILE
# CPU START/STOP and takes DEBUG PROFILE ALLOCS before and after, into
# <dir>/<part>-<kind>-<port>.{cpu,allocs0,allocs1}.pprof (read with `go
# tool pprof -sample_index=alloc_space -base <allocs0> <binary> <allocs1>`
# for the move's allocations).
# Each line also gives cpu_s, the CPU seconds (utime+stime) the three
# servers spent during the driver's run: a figure that, unlike the times,
# does not grow with the machine's load. The driver is scripts/reshardload.
set -euo pipefail
PARTS=${PARTS:-"load small big"}
PIPELINE=${PIPELINE:-10}
VALUES=${VALUES:-1000000}
SLOTS=${SLOTS:-3000}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d ${BENCH_TMP:+-p "$BENCH_TMP"})
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
(cd "$here" && go build -o "$work/shardnode.bin" ./cmd/shardnode && go build -o "$work/reshardload" ./scripts/reshardload)

start() { # kind baseport
  local kind=$1 base=$2 bin=redis-server addrs=()
  [ "$kind" = shardnode ] && bin="$work/shardnode.bin"
  [ "$kind" = shardnode-old ] && bin="$SHARDNODE_OLD"
  pids=()
  for i in 0 1 2; do
    local p=$((base + i)) d="$work/$kind/$((base + i))"
    rm -rf "$d"
    mkdir -p "$d"
    local extra=()
    [ -n "${TRACE:-}${PROFILE:-}" ] && extra=(--enable-debug-command yes)
    # shellcheck disable=SC2206
    [ "$kind" != redis ] && [ -n "${SHARDNODE_ARGS:-}" ] && extra+=($SHARDNODE_ARGS)
    "$bin" --port "$p" --cluster-enabled yes --cluster-config-file "$d/nodes.conf" --dir "$d" \
      --save "" --appendonly no --loglevel warning "${extra[@]}" >"$d/log" 2>&1 &
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

stop() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}

# check waits (at most 10 s) for `redis-cli --cluster check` to pass.
check() {
  for _ in $(seq 100); do
    redis-cli --cluster check "127.0.0.1:$1" >/dev/null 2>&1 && { echo check=ok; return 0; }
    sleep 0.1
  done
  echo check=FAILED
  redis-cli --cluster check "127.0.0.1:$1" | tail -20
  return 1
}

cpu_ticks() { # utime+stime of the servers, in clock ticks
  local t=0
  for p in "${pids[@]}"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done
  echo "$t"
}

reshard_cmd() { # base
  local base=$1 from to
  from=$(redis-cli -p "$base" cluster myid)
  to=$(redis-cli -p $((base + 1)) cluster myid)
  echo "redis-cli --cluster reshard 127.0.0.1:$base --cluster-from $from --cluster-to $to --cluster-slots $SLOTS --cluster-yes --cluster-pipeline $PIPELINE >$work/reshard.log 2>&1"
}

# import_cmd runs CLUSTER MIGRATION IMPORT of the reshard's slots on the
# second master and waits until the task ends (it fails unless completed).
import_cmd() { # base
  local base=$1
  cat >"$work/import.sh" <<EOS
id=\$(redis-cli -p $((base + 1)) cluster migration import 0 $((SLOTS - 1)))
for _ in \$(seq 30000); do
  case \$(redis-cli -p $((base + 1)) cluster migration status id "\$id") in
    *completed*) exit 0 ;;
    *failed*|*canceled*) echo "import failed" >&2; exit 1 ;;
  esac
  sleep 0.02
done
exit 1
EOS
  echo "sh $work/import.sh"
}

# measured wraps a move: it runs it and writes to $work/cpu the CPU
# seconds the three servers and the move's own processes (redis-cli) used
# meanwhile, a figure the machine's load does not change as it changes
# the time.
measured() { # command
  cat >"$work/measure.sh" <<'EOS'
ticks() { local t=0 f; for p in $SERVER_PIDS; do read -r -a f </proc/$p/stat; t=$((t + f[13] + f[14])); done; echo $t; }
a=$(ticks)
TIMEFORMAT='%3U %3S'
{ time bash -c "$1" 2>&3; } 3>&2 2>"$CPU_OUT.client" || exit 1
b=$(ticks)
read -r u s <"$CPU_OUT.client"
awk -v d=$((b - a)) -v hz="$(getconf CLK_TCK)" -v u="$u" -v s="$s" 'BEGIN { printf "server_cpu_s=%.2f client_cpu_s=%.2f\n", d / hz, u + s }' >"$CPU_OUT"
EOS
  printf 'SERVER_PIDS="%s" CPU_OUT=%s bash %s %q' "${pids[*]}" "$work/cpu" "$work/measure.sh" "$1"
}

# traced wraps a move in DEBUG TRACE START/STOP on the three servers when
# TRACE is set and the kind is a shardnode.
traced() { # part kind base command
  local part=$1 kind=$2 base=$3 cmd=$4 pre="" post=""
  if [ -n "${TRACE:-}" ] && [ "$kind" != redis ]; then
    mkdir -p "$TRACE"
    for i in 0 1 2; do
      pre+="redis-cli -p $((base + i)) debug trace start $TRACE/$part-$kind-$((base + i)).trace >/dev/null && "
      post+="; redis-cli -p $((base + i)) debug trace stop >/dev/null"
    done
    echo "$pre { $cmd; }; rc=\$?$post; exit \$rc"
    return
  fi
  if [ -n "${PROFILE:-}" ] && [ "$kind" != redis ]; then
    mkdir -p "$PROFILE"
    for i in 0 1 2; do
      local f="$PROFILE/$part-$kind-$((base + i))"
      pre+="redis-cli -p $((base + i)) debug profile allocs $f.allocs0.pprof >/dev/null && redis-cli -p $((base + i)) debug profile cpu start $f.cpu.pprof >/dev/null && "
      post+="; redis-cli -p $((base + i)) debug profile cpu stop >/dev/null; redis-cli -p $((base + i)) debug profile allocs $f.allocs1.pprof >/dev/null"
    done
    echo "$pre { $cmd; }; rc=\$?$post; exit \$rc"
    return
  fi
  echo "$cmd"
}

echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GB; redis-server $(redis-server --version | awk '{print $3}'); pipeline=$PIPELINE slots=$SLOTS; load: $(cut -d' ' -f1-3 /proc/loadavg)"
base=${BASE:-21000}
for part in $PARTS; do
  for kind in ${KINDS:-redis shardnode}; do
    start "$kind" $base
    case $part in
      load)
        args=(-counters 100000 -writers 16 -probe 1000 -run "$(measured "$(traced load "$kind" $base "$(reshard_cmd $base)")")"
          -run "redis-cli --cluster rebalance 127.0.0.1:$base --cluster-pipeline $PIPELINE >$work/rebalance.log 2>&1")
        ;;
      idle)
        # The load part's writers with no move: the data path alone.
        args=(-counters 100000 -writers 16 -probe 1000 -run "sleep ${IDLE_S:-8}")
        ;;
      small) args=(-values "$VALUES" -value-size 100 -probe "${PROBE:-1000}" -probe-rate "${PROBE_RATE:-0}" -run "$(measured "$(traced small "$kind" $base "$(reshard_cmd $base)")")") ;;
      wholeslot)
        move=$(reshard_cmd $base)
        [ "$kind" = shardnode ] && move=$(import_cmd $base)
        # No probe by default: the servers' CPU is then the move's alone.
        args=(-values 1000000 -value-size 100 -probe "${WHOLESLOT_PROBE:-0}" -run "$(measured "$move")")
        ;;
      steps) args=(-values "$VALUES" -value-size 100 -probe "${PROBE:-0}" -probe-rate "${PROBE_RATE:-0}" -run "move:$SLOTS:$PIPELINE") ;;
      big) args=(-big 20 -big-size $((50 << 20)) -big-slots 0-$((SLOTS - 1)) -probe "${PROBE:-1000}" -probe-rate "${PROBE_RATE:-0}" -run "$(measured "$(traced big "$kind" $base "$(reshard_cmd $base)")")") ;;
      *) echo "unknown part $part" >&2; exit 2 ;;
    esac
    cpu0=$(cpu_ticks)
    perfpid=
    if [ -n "${PERF:-}" ]; then
      mkdir -p "$PERF"
      if [ "${PERF_STAT:-}" = 1 ]; then
        perf stat -e "${PERF_STAT_EVENTS:-task-clock,context-switches,cpu-migrations,page-faults}" -p "$(IFS=,; echo "${pids[*]}")" -o "$PERF/$part-$kind.stat" >/dev/null 2>&1 &
      else
        # shellcheck disable=SC2086
        perf record -q -g ${PERF_OPTS:--F 999} -p "$(IFS=,; echo "${pids[*]}")" -o "$PERF/$part-$kind.data" >/dev/null 2>&1 &
      fi
      perfpid=$!
    fi
    [ -n "${TRACE:-}" ] && args+=(-slow-log "$TRACE/$part-$kind.slow" -slow-ms "${SLOW_MS:-1ms}")
    line=$("$work/reshardload" -addr "127.0.0.1:$base" "${args[@]}" 2>"$work/driver.err") || {
      echo "$part $kind: driver failed:"; tail -5 "$work/driver.err"; tail -5 "$work/reshard.log" 2>/dev/null
    }
    if [ -n "$perfpid" ]; then kill -INT "$perfpid"; wait "$perfpid" || true; fi
    cpu=$(awk -v a="$cpu0" -v b="$(cpu_ticks)" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "cpu_s=%.2f", (b - a) / hz }')
    c=$(check $base || true)
    rate=$(echo "$line" | awk '{for (i = 1; i <= NF; i++) { split($i, a, "="); v[a[1]] = a[2] } if (v["run1_s"] > 0) printf "keys_per_s=%.2f", v["moved_keys"] / v["run1_s"]}')
    if [ -f "$work/cpu" ]; then cpu="$cpu $(cat "$work/cpu")"; rm -f "$work/cpu"; fi
    echo "$part $kind: $line $rate $cpu $c"
    if [ "$part" = steps ]; then sed -n '/^move:/,$p' "$work/driver.err" | sed "s/^/  $kind /"; fi
    stop
    base=$((base + 100))
  done
done
