#!/usr/bin/env bash
# Issue 25, must-show 4 (not part of CI): "shardnode migrate-to-cluster"
# under faults. Each run starts "shardnode up" sources (3 shards x 1
# replica, 3 Sentinels) and a 3-master "shardnode up --cluster", preloads
# keys, runs writers through ShardedSentinelPool that record every
# acknowledged write, and starts migrate-to-cluster with
# "--pause-at <point>"; the run waits for the tool's "tocluster: paused at
# <point>" line (no sleeps), then:
#   copy       SIGKILL the tool mid-copy (a shard past half its snapshot)
#   paused     SIGKILL it in the cut-over: sources paused, nothing fenced
#   fenced     SIGKILL it in the cut-over: every source node fenced, the
#              cluster level, just before the commit point
#   committed  SIGKILL it just after the commit point (sources still paused)
#   cutover-any  no pause point: SIGKILL it 0-60 ms (random) after its
#              "cut-over starts" line, wherever its cut-over is then (the
#              last line it logged says where)
# and checks (once the state settles: a guardian may still be at work):
# exactly one side takes writes (the sources, or the cluster
# holding the commit), every acknowledged write is on it, a rerun of the
# same command completes, and at the end every acknowledged write is on
# the cluster and the cluster equals the (fenced) sources.
#   failover       SIGKILL the master of the shard paused mid-copy instead,
#                  resume the tool (SIGUSR1): it must follow the promoted
#                  replica and end with the cluster equal to the sources.
#   failover-full  the same with 24 MiB of incompressible values, so the
#                  source's death cuts the snapshot itself short (a new
#                  copy from the new master instead of a partial resync).
# Each run prints one "FAULT ..." line; a table sums them up.
#
#   scripts/tocluster-faults.sh                    # RUNS=5, every phase
#   RUNS=2 PHASES="fenced committed" scripts/tocluster-faults.sh
#   KEYS=20000 WRITERS=8 scripts/tocluster-faults.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
PHASES=${PHASES:-"copy paused fenced committed cutover-any failover failover-full"}
KEYS=${KEYS:-5000}
WRITERS=${WRITERS:-4}
OUT=${OUT:-/tmp/tocluster-faults}
rm -rf "$OUT"
mkdir -p "$OUT"
bin=$OUT/shardnode.test
nice -n 10 go test -c -o "$bin" ./cmd/shardnode
results=$OUT/results.txt
: >"$results"
status=0
for phase in $PHASES; do
	for run in $(seq 1 "$RUNS"); do
		log=$OUT/$phase-$run.log
		start=$(date +%s)
		if (cd cmd/shardnode && TOCLUSTER_FAULT=$phase TOCLUSTER_FAULT_RUN=$run TOCLUSTER_KEYS=$KEYS \
			TOCLUSTER_WRITERS=$WRITERS TOCLUSTER_FAULT_LOGDIR=$OUT/logs \
			timeout 170 nice -n 10 "$bin" -test.run '^TestMigrateToClusterFaults$' -test.v -test.timeout 160s >"$log" 2>&1); then
			:
		else
			status=1
		fi
		line=$(grep -m1 '^FAULT ' "$log" || echo "FAULT phase=$phase run=$run NO-RESULT (see $log)")
		echo "$line secs=$(($(date +%s) - start))" | tee -a "$results"
		grep -E '^\s+tocluster_faults_test.go:[0-9]+: [^t]' "$log" | head -5 || true
	done
done
echo
echo "phase          runs  one side serving     lost after kill  rerun ok  lost at end  differ  failed"
for phase in $PHASES; do
	awk -v p="$phase" '
		$2 == "phase=" p {
			n++
			for (i = 3; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
			side[v["one_side"] != "" ? v["one_side"] : "-"]++
			lk += v["lost_after_kill"]; lf += v["lost_final"]; d += v["differ"] + v["extra"]
			if (v["rerun"] == "ok") ok++
			if ($0 ~ /FAILED|NO-RESULT/) bad++
			delete v
		}
		END {
			s = ""
			for (k in side) s = s k "=" side[k] " "
			printf "%-14s %4d  %-20s %15d  %8d  %11d  %6d  %6d\n", p, n, s, lk, ok, lf, d, bad
		}' "$results"
done
exit $status
