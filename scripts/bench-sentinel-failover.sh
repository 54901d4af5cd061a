#!/bin/sh
# Failover benchmark: our Sentinel vs redis-sentinel managing identical
# redis-server sets (1 master, 2 replicas, 3 Sentinels, quorum 2,
# down-after-milliseconds 1000). Each round kills the master with SIGKILL
# and measures the time to the first +switch-master event and to the first
# successful write through go-redis FailoverClient. Kinds alternate.
#
# Usage: scripts/bench-sentinel-failover.sh [rounds]   (default 5)
# Needs redis-server, redis-sentinel and redis-cli in PATH.
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
SHARDIS_SENTINEL_BENCH=$ROUNDS go test -count=1 -timeout 30m -run '^TestFailoverBench$' -v \
	./internal/sentinel/runner 2>&1 | grep -E '^\||round [0-9]+|FAIL|^ok'
