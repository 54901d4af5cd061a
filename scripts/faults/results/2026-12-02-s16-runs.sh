#!/bin/sh
# s16 top-up runs on main 5c691e9 (binaries in bin-s16, built once)
B=/tmp/shardis-faults/bin-s16
OUT=/work/wt/faults/scripts/faults/results/2026-12-02-s16.jsonl
R() { nice -n 10 $B/faults run -shardnode $B/shardnode -out $OUT "$@"; }
R -topology sentinel -fault partition-master -setting redis -runs 1
R -topology cluster -fault kill9 -setting redis,shardnode -runs 1
R -topology cluster -fault partition-master -setting shardnode -runs 1
R -topology sentinel,cluster -fault sigstop,partition-replica,crash-in-failover -setting redis,shardnode,shardnode-ack1 -runs 4
echo ALLDONE
