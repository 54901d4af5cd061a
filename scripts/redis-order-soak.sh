#!/usr/bin/env bash
# Runs Redis 7.0's unit/type/list, unit/pubsub and unit/multi against a
# fresh shardnode (default settings, so the default io-threads) RUNS times
# in a row (20 by default) with scripts/redis-tests.sh, and prints pass or
# fail per run and per file. These are the files whose tests depend on
# cross-connection ordering (docs/ARCHITECTURE.md, "Ordering between
# connections"); the soak is the judge of that ordering under a loaded
# 2-core machine, where the Go tests only check correctness.
#
#   REDIS_TESTS=/path/to/redis-7.0.15-tests scripts/redis-order-soak.sh [-p PORT] [-b BASEPORT] [-n RUNS] [FILE...]
#
# A run passes when every file's failures are among KNOWN_FAILURES, the
# tests that fail on every run for a reason unrelated to ordering (they
# use streams, which shardnode does not implement); a file that ran no
# test at all fails. SKIPFILE and TAGS are passed on to redis-tests.sh.
set -u
port=22499
baseport=22500
runs=20
while getopts "p:b:n:" o; do
  case $o in
    p) port=$OPTARG ;;
    b) baseport=$OPTARG ;;
    n) runs=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
: "${REDIS_TESTS:?set REDIS_TESTS to a copy of the redis 7.0.15 tests}"
files=("$@")
[ ${#files[@]} -eq 0 ] && files=(unit/type/list unit/pubsub unit/multi)
here=$(cd "$(dirname "$0")/.." && pwd)
: "${SKIPFILE:=$(cd "$here/../shared/testdata" 2>/dev/null && pwd)/redis-tests-skip-scripting.txt}"
[ -f "$SKIPFILE" ] || SKIPFILE=/work/shared/testdata/redis-tests-skip-scripting.txt
export SKIPFILE
KNOWN_FAILURES=${KNOWN_FAILURES:-"Keyspace notifications: stream events test|Blocking commands ignores the timeout"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
declare -A filefail
for run in $(seq "$runs"); do
  out="$work/run$run.txt"
  bash "$here/scripts/redis-tests.sh" -p "$port" -b "$baseport" "${files[@]}" >"$out" 2>&1
  ok_run=1
  line="run $run/$runs:"
  detail=""
  for f in "${files[@]}"; do
    res=$(grep -E "^$f +ok=" "$out")
    ok=$(sed -nE 's/.*ok=([0-9]+).*/\1/p' <<<"$res")
    # The failures listed under the file's line, up to the next file's.
    errs=$(awk -v f="$f" '$1 == f {on=1; next} /^[^ ]/ {on=0} on && /\[(err|exception)\]/' "$out" |
      sed -E 's/^ *\[(err|exception)\]: //; s/ in tests\/.*//' | grep -vE "^($KNOWN_FAILURES)$")
    if [ -z "$ok" ] || [ "$ok" -eq 0 ] || [ -n "$errs" ]; then
      ok_run=0
      filefail[$f]=$((${filefail[$f]:-0} + 1))
      line="$line $f FAIL(ok=${ok:-0})"
      while IFS= read -r e; do [ -n "$e" ] && detail="$detail    $f: $e
"; done <<<"$errs"
    else
      line="$line $f ok=$ok"
    fi
  done
  if [ $ok_run -eq 1 ]; then
    passed=$((passed + 1))
    echo "PASS $line"
  else
    failed=$((failed + 1))
    echo "FAIL $line"
    printf '%s' "$detail"
  fi
done
echo "runs passed=$passed failed=$failed"
for f in "${files[@]}"; do
  echo "  $f failed in ${filefail[$f]:-0} of $runs runs"
done
[ $failed -eq 0 ]
