#!/usr/bin/env bash
# Differential fuzzing against redis-server (not CI): starts a redis-server
# and a shardnode on loopback (PORT and PORT+1, default 18950), sends both
# the same random command sequences drawn from redis-server's COMMAND DOCS
# (scripts/difffuzz) and prints every reply that differs, shrunk to a
# short sequence. Exit status 1 when a divergence was found.
#
#   scripts/difffuzz.sh [difffuzz flags: -seed N -cases N -len N -only cmd,cmd -resp3 -multi PERCENT]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
port=${PORT:-18950}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
(cd "$here" && go build -o "$work/shardnode" ./cmd/shardnode && go build -o "$work/difffuzz" ./scripts/difffuzz)
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
"$work/shardnode" --port $((port + 1)) --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >"$work/shardnode.log" 2>&1 &
for p in "$port" $((port + 1)); do
  for _ in $(seq 50); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
done
"$work/difffuzz" -redis 127.0.0.1:"$port" -shardnode 127.0.0.1:$((port + 1)) "$@"
