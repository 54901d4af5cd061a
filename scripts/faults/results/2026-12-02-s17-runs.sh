#!/bin/sh
# s17 top-up of the single-run cells (issue 27, must-show 1) on main 3114ce5
# (shardnode and the driver built once into bin-s17 from branch faultruns,
# whose changes are the driver's -cluster-replicas flag and, from 16:49,
# the fault sigstop-failover):
#   go build -o /tmp/shardis-faults/bin-s17/faults ./scripts/faults
#   go build -o /tmp/shardis-faults/bin-s17/shardnode ./cmd/shardnode
# Batches of a few runs; each waits until no shf-* namespace exists (another
# helper's runs), since the driver removes left-over namespaces at start.
# Usage: sudo sh 2026-12-02-s17-runs.sh BATCH...   (batch names below)
# Run in s17: c31 (16:05), c32cif sack2 (16:08), then three times
# c31 c32cif sack2 (16:10, 16:16, 16:23); sack2x gap (x4) sack2x (16:30);
# then, with the driver rebuilt with sigstop-failover: ssf (16:49),
# csf (16:57), ssf2 csf csf (17:01), csf csf (17:05), ssf3 (17:08).
B=/tmp/shardis-faults/bin-s17
OUT=/work/wt/faultruns/scripts/faults/results/2026-12-02-s17.jsonl
R() {
	i=0
	while ip netns list | grep -q shf; do
		i=$((i + 1))
		[ $i -gt 90 ] && { echo "namespaces still busy after 15 min" >&2; exit 1; }
		sleep 10
	done
	date -u +"%H:%M:%S batch $* load $(cut -d' ' -f1-3 /proc/loadavg)"
	o=$OUT
	if [ "$1" = -out-file ]; then
		o=${OUT%.jsonl}-$2.jsonl
		shift 2
	fi
	nice -n 10 $B/faults run -shardnode $B/shardnode -out $o "$@"
}
for b in "$@"; do
	case $b in
	# cluster 3×1 with min-replicas-ack 1 (n = every replica), one run of each fault per batch
	c31) R -topology cluster -cluster-replicas 1 -fault kill9,sigstop,partition-master,partition-replica -setting shardnode-ack1 -runs 1 ;;
	# cluster 3×2 crash-in-failover (1 replica + the one that takes over), ack1 and ack2
	c32cif) R -topology cluster -cluster-replicas 1 -fault crash-in-failover -setting shardnode-ack1,shardnode-ack2 -runs 1 ;;
	# Sentinel with min-replicas-ack 2 (n = every replica)
	sack2) R -topology sentinel -fault kill9,partition-master -setting shardnode-ack2 -runs 1 ;;
	# after the top-up: the min-replicas-ack 2 cells never run before
	sack2x) R -topology sentinel -fault sigstop,partition-replica,crash-in-failover,partition-sentinels -setting shardnode-ack2 -runs 1 ;;
	# (not run in s17)
	cack2) R -topology cluster -fault kill9,sigstop,partition-master,partition-replica,crash-in-failover -setting shardnode-ack2 -runs 1 ;;
	# the fault sigstop-failover (added in s17; the driver rebuilt into bin-s17 at 16:50)
	ssf) R -out-file sigstop-failover -topology sentinel -fault sigstop-failover -setting shardnode-ack1,shardnode,redis -runs 1 ;;
	csf) R -out-file sigstop-failover -topology cluster -fault sigstop-failover -setting shardnode-ack1 -runs 1 ;;
	ssf2) R -out-file sigstop-failover -topology sentinel -fault sigstop-failover -setting shardnode-ack1,shardnode-ack2 -runs 2 ;;
	ssf3) R -out-file sigstop-failover -topology sentinel -fault sigstop-failover -setting shardnode-ack1,shardnode-ack2,shardnode,redis -runs 2 ;;
	gap) sleep 60 ;; # room for another helper's runs
	*) echo "unknown batch $b" >&2; exit 2 ;;
	esac
done
echo ALLDONE
