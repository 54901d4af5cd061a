#!/bin/sh
# s18 re-validation on the merged main (6aaf374: both freezes, the
# one-fdatasync journal, the MULTI pause fix): every Sentinel fault with
# acknowledgement on, and the cluster's, on the code that lands.
#   go build -o /tmp/shardis-faults/bin-s18-final/faults ./scripts/faults
#   go build -o /tmp/shardis-faults/bin-s18-final/shardnode ./cmd/shardnode
# Usage: sudo sh 2026-12-03-s18-final-runs.sh BATCH...
B=${B:-/tmp/shardis-faults/bin-s18-final}
OUT=${OUT:-/work/main/scripts/faults/results/2026-12-03-s18-final.jsonl}
R() {
	date -u +"%H:%M:%S batch $* load $(cut -d' ' -f1-3 /proc/loadavg)"
	flock /tmp/shardis-faults.lock nice -n 10 $B/faults run -shardnode $B/shardnode -out $OUT "$@"
}
for b in "$@"; do
	case $b in
	sent) R -topology sentinel -fault kill9,sigstop,sigstop-failover,partition-master,partition-replica,crash-in-failover,partition-sentinels -setting shardnode-ack1,shardnode-ack2 -runs 1 ;;
	clus) R -topology cluster -cluster-replicas 2 -fault kill9,sigstop-failover,partition-master,partition-master-keep-replica -setting shardnode-ack1 -runs 1 ;;
	*) echo "unknown batch $b" >&2; exit 2 ;;
	esac
done
echo ALLDONE
