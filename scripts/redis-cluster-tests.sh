#!/usr/bin/env bash
# Runs Redis 7.0's own cluster tests (spawn mode: the suites start every
# server themselves) with shardnode in the place of redis-server, and prints
# ok/err per file.
#
#   REDIS_TESTS=/path/to/redis-7.0.15-tests scripts/redis-cluster-tests.sh \
#       00-base 09-pubsub 24-links unit/cluster/misc unit/cluster/links ...
#
# A name starting with "unit/" runs through `./runtest --single <name>`
# (start_cluster: the harness waits for " PID: <pid>" and "Ready to accept"
# on the server's stdout); any other name is a file of tests/cluster/tests
# and runs through `./runtest-cluster --single <name>` (20 instances started
# from tests/cluster/tmp as ../../../src/redis-server <conf>).
#
# REDIS_TESTS is as for scripts/redis-tests.sh (runtest, runtest-cluster and
# tests/ from the redis repository at tag 7.0.15, never committed here). It
# is copied to a temporary directory whose src/redis-server is a two-line
# script that execs a shardnode built from this tree (exec, so the pid the
# harness holds is shardnode's); redis-cli and the other tools stay the
# Debian binaries. Set SERVER=redis to run the same files against
# redis-server. BASEPORT (default 15000; with its bus ports +10000 it stays below
# the kernel's ephemeral range, where outgoing connections would take the
# ports) moves the ports: runtest-cluster's
# redis_base_port (bus ports are +10000) and runtest's --baseport. Each file
# runs at most TIMEOUT seconds (default 900). KEEP_WORK=1 keeps the copy
# (and the instances' directories and logs, with --dont-clean) and prints
# its path. SHARDNODE=/path/to/binary uses that binary instead of building
# one.
#
# The tests of tests/cluster that need Lua scripting (CLUSTER_SKIP below)
# run for both servers; SKIP_SCRIPTING=1 skips them (the copy's `test`
# proc prints "name: SKIPPED" for them).
#
# Counts: runtest-cluster prints "HH:MM:SS> name: OK" per passed test and
# "FAILED" for a failed one (the file then jumps to its end); runtest prints
# "[ok]" and "[err]"/"[exception]".
set -u
: "${REDIS_TESTS:?set REDIS_TESTS to a copy of the redis 7.0.15 tests}"
here=$(cd "$(dirname "$0")/.." && pwd)
baseport=${BASEPORT:-15000}
limit=${TIMEOUT:-900}
work=$(mktemp -d)
if [ -n "${KEEP_WORK:-}" ]; then
  echo "work directory: $work"
else
  trap 'rm -rf "$work"' EXIT
fi
cp -a "$REDIS_TESTS/." "$work/"
mkdir -p "$work/src"
rm -f "$work/src/redis-server"
for b in redis-sentinel redis-cli redis-benchmark redis-check-aof redis-check-rdb; do
  [ -e "$work/src/$b" ] || ln -sf "/usr/bin/$b" "$work/src/$b"
done
if [ "${SERVER:-shardnode}" = shardnode ] && [ -n "${SHARDNODE:-}" ]; then
  target=$SHARDNODE
elif [ "${SERVER:-shardnode}" = shardnode ]; then
  (cd "$here" && go build -o "$work/shardnode" ./cmd/shardnode) || exit 1
  target="$work/shardnode"
else
  target=/usr/bin/redis-server
fi
printf '#!/bin/sh\nexec %s "$@"\n' "$target" >"$work/src/redis-server"
chmod +x "$work/src/redis-server"
sed -i "s/^set ::redis_base_port .*/set ::redis_base_port $baseport/" "$work/tests/instances.tcl"
# Tests of tests/cluster that need Lua scripting (FUNCTION LOAD, EVAL).
CLUSTER_SKIP='Function no-cluster flag
Script no-cluster flag'
skip_default=0
if [ "${SKIP_SCRIPTING:-$skip_default}" = 1 ]; then
  printf '%s\n' "$CLUSTER_SKIP" >"$work/tests/cluster/skip.txt"
  sed -i '/^proc test {descr code} {$/a\
    if {[file exists ../skip.txt] \&\& [lsearch -exact [split [string trim [read [set f [open ../skip.txt]]][close $f]] "\\n"] $descr] >= 0} {\
        puts "[clock format [clock seconds] -format %H:%M:%S]> $descr: SKIPPED"\
        return\
    }' "$work/tests/instances.tcl"
fi
clean=""
[ -n "${KEEP_WORK:-}" ] && clean=--dont-clean
total_ok=0
total_err=0
for t in "$@"; do
  out="$work/$(echo "$t" | tr / _).out"
  case $t in
    unit/*)
      (cd "$work" && timeout "$limit" ./runtest --single "$t" --clients 1 --port $((baseport + 90)) \
        --baseport "$baseport" --portcount 200 $clean 2>&1 | sed 's/\x1b\[[0-9;]*m//g') >"$out"
      ok=$(grep -c '^\[ok\]' "$out")
      err=$(grep -cE '^\[(err|exception)\]' "$out")
      fails=$(grep -E '^\[(err|exception)\]' "$out")
      ;;
    *)
      (cd "$work" && timeout "$limit" ./runtest-cluster --single "$t" $clean 2>&1 |
        sed 's/\x1b\[[0-9;]*m//g') >"$out"
      ok=$(grep -cE '^[0-9]{2}:[0-9]{2}:[0-9]{2}> .*: OK$' "$out")
      # A failed test prints "HH:MM:SS> name: FAILED: ..." (an assertion
      # then also "(Jumping to next unit after error)" and a bare
      # "FAILED: caught an error in the test", counted once); "FAILED:
      # caught an error" after anything else (a stack trace, or the
      # progress dots on the test's own line) is an error too.
      err=$(awk '/^[0-9][0-9]:[0-9][0-9]:[0-9][0-9]> .*: FAILED/ {n++; prev=$0; next} /FAILED: caught an error/ && prev !~ /Jumping to next unit/ {n++} {prev=$0} END {print n+0}' "$out")
      fails=$(grep -oE '^[0-9:]{8}> .*: FAILED.*|FAILED: caught an error.*' "$out")
      # A file cut by TIMEOUT ends with neither verdict: one error.
      if ! grep -qE '^GOOD! No errors\.|test\(s\) failed\.' "$out"; then
        err=$((err + 1))
        fails="$fails${fails:+
}timed out after ${limit}s in: $(grep -E '^[0-9:]{8}> ' "$out" | tail -1)"
      fi
      ;;
  esac
  total_ok=$((total_ok + ok))
  total_err=$((total_err + err))
  printf '%-36s ok=%-4s err=%s\n' "$t" "$ok" "$err"
  [ -n "$fails" ] && echo "$fails" | head -20 | cut -c1-240 | sed 's/^/    /'
  [ -n "${KEEP_OUTPUT:-}" ] && cp "$out" "$KEEP_OUTPUT/"
done
echo "total ok=$total_ok err=$total_err"
