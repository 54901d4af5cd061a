#!/bin/sh
# Fault harness (docs/FAULTS.md): builds shardnode and the driver, then runs
# the scenarios one at a time in network namespaces (prefix shf-), printing
# the table at the end. Needs root, iproute2, redis-server, redis-sentinel
# and redis-cli. Never run in CI.
#
# Usage:
#   scripts/faults/run.sh [-topology sentinel,cluster] [-fault kill9,...]
#                         [-setting redis,shardnode] [-runs N] [-out results.jsonl]
#   scripts/faults/run.sh --cleanup      remove namespaces a crashed run left
#   scripts/faults/run.sh table results.jsonl ...
#
# Results are appended to -out (default /tmp/shardis-faults/results.jsonl) as
# JSON lines; logs and histories of each run stay in /tmp/shardis-faults/.
set -eu
cd "$(dirname "$0")/../.."
BIN=${FAULTS_BIN:-/tmp/shardis-faults/bin}
mkdir -p "$BIN"
go build -o "$BIN/faults" ./scripts/faults
case "${1:-}" in
--cleanup) exec "$BIN/faults" cleanup ;;
table) shift; exec "$BIN/faults" table "$@" ;;
esac
go build -o "$BIN/shardnode" ./cmd/shardnode
case " $* " in
*" -out "*) exec nice -n 10 "$BIN/faults" run -shardnode "$BIN/shardnode" "$@" ;;
*) exec nice -n 10 "$BIN/faults" run -shardnode "$BIN/shardnode" -out /tmp/shardis-faults/results.jsonl "$@" ;;
esac
