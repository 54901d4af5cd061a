#!/usr/bin/env bash
# Whole-slot migration (CLUSTER MIGRATION IMPORT) under load, issue 23's
# must-show 4: 3 shardnode masters (appendonly yes, appendfsync always, no
# replicas so no failover), 100,000 counters, 16 go-redis ClusterClient
# writers incrementing them, 3000 slots imported by the third master from
# the first. RUNS runs without kills, then KILLRUNS runs killing the source
# and KILLRUNS killing the target at a random moment (restarted from its
# AOF), then HANDOFFRUNS of each killed during the write pause. Every run checks one owner per slot on every node, no acknowledged
# increment lost, no ASK or TRYAGAIN; it prints the moved keys/s, the write
# pause the source measured and the longest INCR a client waited during
# the migration (scripts/slotmigload).
#
#   scripts/bench-slotmig.sh
#   RUNS=3 KILLRUNS=5 KEYS=100000 SLOTS=3000 scripts/bench-slotmig.sh
set -euo pipefail
RUNS=${RUNS:-3}
KILLRUNS=${KILLRUNS:-5}
HANDOFFRUNS=${HANDOFFRUNS:-2}
KEYS=${KEYS:-100000}
SLOTS=${SLOTS:-3000}
WRITERS=${WRITERS:-16}
BASE=${BASE:-21100}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$here" && go build -o "$work/shardnode.bin" ./cmd/shardnode && go build -o "$work/slotmigload" ./scripts/slotmigload)
status=0
run() { "$work/slotmigload" -bin "$work/shardnode.bin" -base "$BASE" -keys "$KEYS" -slots "$SLOTS" -writers "$WRITERS" -dir "$work/runs-$1" "${@:2}" || status=1; }
echo "# $(date -u +%FT%TZ) $(nproc) cores, keys=$KEYS slots=$SLOTS writers=$WRITERS"
run none -kill none -runs "$RUNS"
run source -kill source -runs "$KILLRUNS"
run target -kill target -runs "$KILLRUNS"
# The same kills at the write pause (the victim's task in state handoff).
run source-h -kill source -kill-in handoff -runs "$HANDOFFRUNS"
run target-h -kill target -kill-in handoff -runs "$HANDOFFRUNS"
exit $status
