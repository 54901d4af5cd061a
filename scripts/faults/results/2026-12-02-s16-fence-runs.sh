#!/bin/sh
# s16: partition-sentinels on the fence branch (bin-s16b), and before the fence (bin-s16's shardnode, main 5c691e9)
B=/tmp/shardis-faults/bin-s16b
R=/work/wt/faults/scripts/faults/results
nice -n 10 $B/faults run -shardnode $B/shardnode -out $R/2026-12-02-s16-fence.jsonl -topology sentinel -fault partition-sentinels -setting shardnode-ack1,redis,shardnode -runs 5
nice -n 10 $B/faults run -shardnode /tmp/shardis-faults/bin-s16/shardnode -out $R/2026-12-02-s16-prefence.jsonl -topology sentinel -fault partition-sentinels -setting shardnode-ack1 -runs 3
nice -n 10 $B/faults run -shardnode $B/shardnode -out $R/2026-12-02-s16-fence.jsonl -topology sentinel -fault kill9,sigstop,partition-master,partition-replica,crash-in-failover -setting shardnode-ack1 -runs 1
echo ALLDONE
