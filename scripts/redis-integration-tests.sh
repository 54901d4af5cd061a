#!/usr/bin/env bash
# Runs Redis 7.0's own integration tests (spawn mode: the suite starts the
# servers itself) with shardnode in the place of redis-server, and prints
# ok/err per file.
#
#   REDIS_TESTS=/path/to/redis-7.0.15-tests scripts/redis-integration-tests.sh \
#       integration/replication-psync integration/replication-2 ...
#
# REDIS_TESTS is as for scripts/redis-tests.sh (runtest and tests/ from the
# redis repository at tag 7.0.15, never committed here). It is copied to a
# temporary directory whose src/redis-server is a shardnode built from this
# tree, so both masters and replicas of each test are shardnodes; the other
# tools (redis-cli, redis-benchmark) stay the Debian binaries. Set
# SERVER=redis to run the same files against redis-server. BASEPORT (default
# 23000) moves the ports the suite uses. Each file runs with --clients 1,
# at most 15 minutes.
set -u
: "${REDIS_TESTS:?set REDIS_TESTS to a copy of the redis 7.0.15 tests}"
here=$(cd "$(dirname "$0")/.." && pwd)
baseport=${BASEPORT:-23000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -a "$REDIS_TESTS/." "$work/"
mkdir -p "$work/src"
for b in redis-server redis-sentinel redis-cli redis-benchmark redis-check-aof redis-check-rdb; do
  [ -e "$work/src/$b" ] || ln -sf "/usr/bin/$b" "$work/src/$b"
done
if [ "${SERVER:-shardnode}" = shardnode ]; then
  (cd "$here" && go build -o "$work/shardnode" ./cmd/shardnode) || exit 1
  ln -sf "$work/shardnode" "$work/src/redis-server"
else
  ln -sf /usr/bin/redis-server "$work/src/redis-server"
fi
total_ok=0
total_err=0
for t in "$@"; do
  out="$work/$(echo "$t" | tr / _).out"
  (cd "$work" && timeout 900 ./runtest --single "$t" --clients 1 --port $((baseport + 90)) --baseport "$baseport" 2>&1 |
    sed 's/\x1b\[[0-9;]*m//g') >"$out"
  ok=$(grep -c '^\[ok\]' "$out")
  err=$(grep -cE '^\[(err|exception)\]' "$out")
  total_ok=$((total_ok + ok))
  total_err=$((total_err + err))
  printf '%-36s ok=%-4s err=%s\n' "$t" "$ok" "$err"
  grep -E '^\[(err|exception)\]' "$out" | head -20 | cut -c1-200 | sed 's/^/    /'
  [ -n "${KEEP_OUTPUT:-}" ] && cp "$out" "$KEEP_OUTPUT/"
done
echo "total ok=$total_ok err=$total_err"
