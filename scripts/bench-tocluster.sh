#!/usr/bin/env bash
# Issue 25 at full scale (not part of CI): "shardnode up" (3 shards x 1
# replica, 3 Sentinels), 16 writers through ShardedSentinelPool, 100,000
# preloaded keys of every type, "shardnode migrate-to-cluster" into a
# 3-master "shardnode up --cluster". It prints the copy rate next to
# "redis-cli --cluster import" of the same preloaded data into another
# 3-master cluster (must-show 3), the writers' longest write (their pause),
# and fails if an acknowledged write is missing or a key differs
# (must-show 1). Then the same migration with redis-server sources,
# redis-sentinel and a redis-server cluster (must-show 2, smaller: the
# engine's own test, with a source failover test after it).
#
#   scripts/bench-tocluster.sh            # KEYS=100000 WRITERS=16
#   KEYS=20000 WRITERS=8 scripts/bench-tocluster.sh
set -euo pipefail
cd "$(dirname "$0")/.."
KEYS=${KEYS:-100000}
WRITERS=${WRITERS:-16}
echo "== shardnode sources and cluster: $KEYS keys, $WRITERS writers, vs redis-cli --cluster import"
status=0
TOCLUSTER_KEYS=$KEYS TOCLUSTER_WRITERS=$WRITERS TOCLUSTER_COMPARE_IMPORT=1 \
	nice -n 10 go test -run '^TestMigrateToCluster$' -count=1 -v -timeout 30m ./cmd/shardnode >/tmp/bench-tocluster.1 2>&1 || status=1
grep -E '^(=== RUN|--- |PASS|FAIL|ok)|tocluster_test.go' /tmp/bench-tocluster.1 | grep -v '^        ' || true
echo "== redis-server sources (redis-sentinel) into a redis-server cluster; source failover"
TOCLUSTER_KEYS=$KEYS nice -n 10 go test -run '^(TestMigrateRedisServer|TestMigrateFollowsFailover)$' -count=1 -v -timeout 30m ./internal/tocluster >/tmp/bench-tocluster.2 2>&1 || status=1
grep -E '^(=== RUN|--- |PASS|FAIL|ok)|tocluster_test.go:[0-9]+: [^t]' /tmp/bench-tocluster.2 || true
exit $status
