#!/usr/bin/env bash
# Job-queue round trip with hibiken/asynq v0.26.0, unmodified, against
# shardnode and redis-server (not run in CI: asynq's dependencies live in
# the separate module scripts/asynqcheck, which the main module's go.mod
# does not see).
#
#   scripts/asynq-check.sh [-p PORT] [-s "shardnode redis"]
#
# For each server: start it on 127.0.0.1:PORT with no persistence, run
# scripts/asynqcheck (enqueue, retry, archive, scheduled, periodic, unique,
# retention, queue stats; see its doc), stop it. Exits non-zero if a
# check fails on any server.
set -eu
port=21297
servers="shardnode redis"
while getopts "p:s:" o; do
  case $o in
    p) port=$OPTARG ;;
    s) servers=$OPTARG ;;
    *) exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
(cd "$here" && go build -o "$work/shardnode.bin" ./cmd/shardnode)
(cd "$here/scripts/asynqcheck" && go build -o "$work/asynqcheck" .)
status=0
for server in $servers; do
  if [ "$server" = shardnode ]; then
    "$work/shardnode.bin" --port "$port" --bind 127.0.0.1 --save "" --dir "$work" --loglevel warning >"$work/server.log" 2>&1 &
  else
    redis-server --port "$port" --bind 127.0.0.1 --save "" --dir "$work" --loglevel warning >"$work/server.log" 2>&1 &
  fi
  pid=$!
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
  echo "== $server"
  if ! "$work/asynqcheck" -addr "127.0.0.1:$port"; then
    status=1
    cat "$work/server.log"
  fi
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null || true
  pid=""
done
exit $status
