#!/bin/sh
# s18 runs of branch cfreeze at 7f36fb5 (issue 27, cluster side: the freeze and the
# fault partition-master-keep-replica). shardnode and the driver are built
# from the branch into bin-cfreeze:
#   go build -o /tmp/shardis-faults/bin-cfreeze/faults ./scripts/faults
#   go build -o /tmp/shardis-faults/bin-cfreeze/shardnode ./cmd/shardnode
# Every invocation runs one scenario once under flock: another helper runs
# the harness too, and the driver deletes left-over shf-* namespaces at
# start.
# Usage: sudo sh 2026-12-03-s18-cfreeze-runs.sh BATCH...   (batch names below)
# Run in s18: csf (12:04), then pk1 pka c3 csf pk1 pka c3 csf pk1 pka csf
# pk1 pka csf pk1 pka (12:06-12:39), then c3 c3 c3 (12:40-12:47).
B=/tmp/shardis-faults/bin-cfreeze
OUT=/work/wt/cfreeze/scripts/faults/results/2026-12-03-s18-cfreeze.jsonl
R() {
	date -u +"%H:%M:%S $* load $(cut -d' ' -f1-3 /proc/loadavg)"
	flock /tmp/shardis-faults.lock nice -n 10 $B/faults run -shardnode $B/shardnode -out $OUT -runs 1 "$@"
}
for b in "$@"; do
	case $b in
	# the cluster partial partition, 3×2: min-replicas-ack 1, and async
	pk1) R -topology cluster -cluster-replicas 2 -fault partition-master-keep-replica -setting shardnode-ack1 ;;
	pka) R -topology cluster -cluster-replicas 2 -fault partition-master-keep-replica -setting redis,shardnode ;;
	# the default 3×3 layout with min-replicas-ack 2
	c3) R -topology cluster -fault kill9,sigstop,sigstop-failover,partition-master -setting shardnode-ack2 ;;
	# a stopped master resumed mid-failover, 3×2 ack1
	csf) R -topology cluster -fault sigstop-failover -setting shardnode-ack1 ;;
	*) echo "unknown batch $b" >&2; exit 2 ;;
	esac
done
echo ALLDONE
