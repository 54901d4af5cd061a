#!/usr/bin/env bash
# Runs Redis 7.0's own unit tests in external mode against a fresh shardnode
# per test file, as ../shared/REDIS-TESTS.md describes, and prints ok/err
# per file.
#
#   REDIS_TESTS=/path/to/redis-7.0.15-tests scripts/redis-tests.sh [-p PORT] [-b BASEPORT] unit/type/string unit/expire ...
#
# REDIS_TESTS must hold runtest and tests/ from the redis repository at tag
# 7.0.15 (never committed here) with src/ linked to the Debian binaries.
# SKIPFILE names a runtest skip list (default: none, see below).
# Set SERVER=redis to run the same files against redis-server instead, and
# TAGS to replace the default --tags filter (for example to allow
# needs:debug and needs:save).
set -u
port=21111
baseport=21500
while getopts "p:b:" o; do
  case $o in
    p) port=$OPTARG ;;
    b) baseport=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
: "${REDIS_TESTS:?set REDIS_TESTS to a copy of the redis 7.0.15 tests}"
here=$(cd "$(dirname "$0")/.." && pwd)
# SKIPFILE names a runtest --skipfile; it defaults to none now that
# scripting is in (the shared redis-tests-skip-scripting.txt only existed
# because it was missing). SKIPFILE=path brings such a list back.
skipopt=()
if [ -n "${SKIPFILE:-}" ]; then
  skipopt=(--skipfile "$SKIPFILE")
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin="$work/shardnode"
if [ "${SERVER:-shardnode}" = shardnode ]; then
  (cd "$here" && go build -o "$bin" ./cmd/shardnode) || exit 1
fi
tags=${TAGS:-"-needs:debug -needs:repl -needs:config-maxmemory -needs:config-resetstat -needs:reset -needs:save -needs:pfdebug -needs:latency -needs:local-process"}
# As Redis's own external-mode CI starts its server: the tests use DEBUG
# and CONFIG SET dir, which Redis 7.0 (and shardnode) refuse by default.
protect="--enable-debug-command yes --enable-protected-configs yes --enable-module-command yes"
total_ok=0
total_err=0
for unit in "$@"; do
  if [ "${SERVER:-shardnode}" = shardnode ]; then
    "$bin" --port "$port" --bind 127.0.0.1 --save "" --dir "$work" --loglevel warning $protect >"$work/node.log" 2>&1 &
  else
    redis-server --port "$port" --bind 127.0.0.1 --save "" --dir "$work" --loglevel warning $protect >"$work/node.log" 2>&1 &
  fi
  pid=$!
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  out="$work/$(echo "$unit" | tr / _).out"
  (cd "$REDIS_TESTS" && timeout 900 ./runtest --host 127.0.0.1 --port "$port" --baseport "$baseport" --portcount 100 \
    --single "$unit" --durable --ignore-encoding --timeout 120 "${skipopt[@]}" --tags "$tags" 2>&1 | sed 's/\x1b\[[0-9;]*m//g') >"$out"
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  ok=$(grep -c '^\[ok\]' "$out")
  err=$(grep -cE '^\[(err|exception)\]' "$out")
  total_ok=$((total_ok + ok))
  total_err=$((total_err + err))
  printf '%-24s ok=%-4s err=%s\n' "$unit" "$ok" "$err"
  grep -E '^\[(err|exception)\]' "$out" | head -40 | sed 's/^/    /'
  [ -n "${KEEP_OUTPUT:-}" ] && cp "$out" "$KEEP_OUTPUT/"
done
echo "total ok=$total_ok err=$total_err"
