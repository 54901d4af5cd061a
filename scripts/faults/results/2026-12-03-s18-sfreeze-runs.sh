#!/bin/sh
# s18 sfreeze (issue 27): the Sentinel's replica freeze against the fault
# sigstop-failover. shardnode and the driver built once from branch sfreeze
# (commit in the report / docs/FAULTS.md) into bin-s18-sfreeze:
#   go build -o /tmp/shardis-faults/bin-s18-sfreeze/faults ./scripts/faults
#   go build -o /tmp/shardis-faults/bin-s18-sfreeze/shardnode ./cmd/shardnode
# Every batch takes /tmp/shardis-faults.lock (the cfreeze helper runs the
# harness too; the driver removes left-over shf-* namespaces at start).
# Usage: sudo sh 2026-12-03-s18-sfreeze-runs.sh BATCH...
# Run at 12:08 (ssf ssfasync regress, bin-s18-sfreeze = e1cfa28), then with
# B=/tmp/shardis-faults/bin-s18-sfreeze2 (3b75789: the freeze resent on a
# new link, dead bookkeeping removed): ssf1 psent.
B=${B:-/tmp/shardis-faults/bin-s18-sfreeze}
OUT=/work/wt/sfreeze/scripts/faults/results/2026-12-03-s18-sfreeze.jsonl
R() {
	date -u +"%H:%M:%S batch $* load $(cut -d' ' -f1-3 /proc/loadavg)"
	flock /tmp/shardis-faults.lock nice -n 10 $B/faults run -shardnode $B/shardnode -out $OUT "$@"
}
for b in "$@"; do
	case $b in
	# the gap: min-replicas-ack 1 and 2 of 2, 5 runs each (0 lost is the target)
	ssf) R -topology sentinel -fault sigstop-failover -setting shardnode-ack1,shardnode-ack2 -runs 5 ;;
	# async settings (no freeze: redis-sentinel's behaviour), 2 more runs each (3 in s17)
	ssfasync) R -topology sentinel -fault sigstop-failover -setting redis,shardnode -runs 2 ;;
	# nothing regressed: the other master faults with min-replicas-ack 1
	regress) R -topology sentinel -fault kill9,sigstop,partition-master -setting shardnode-ack1 -runs 1 ;;
	# the final build: 5 more ack1 runs
	ssf1) R -topology sentinel -fault sigstop-failover -setting shardnode-ack1 -runs 5 ;;
	# the election no longer waits for the Sentinel fence's lease: the fault it was for
	psent) R -topology sentinel -fault partition-sentinels -setting shardnode-ack1,shardnode-ack2 -runs 2 ;;
	*) echo "unknown batch $b" >&2; exit 2 ;;
	esac
done
echo ALLDONE
