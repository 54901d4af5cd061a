#!/usr/bin/env bash
# The cost of an ACL check on the command path: redis-benchmark SET and GET
# as the default user (no check: it may run everything) and as a restricted
# user (a command bitmap and a key pattern to check), on shardnode and, in
# the same run, on redis-server. Load-independent figure: the server's CPU
# time (utime+stime from /proc/<pid>/stat) per request, median over ROUNDS
# alternating rounds; ops/s is printed too but is noise on a loaded machine.
#
#   scripts/bench-acl.sh                 # ROUNDS=3 REQUESTS=200000 PIPELINES="1 16"
set -euo pipefail
ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-200000}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-"1 16"}
RPORT=${RPORT:-16479}
SPORT=${SPORT:-16480}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'kill $rpid $spid 2>/dev/null || true; rm -rf "$work"' EXIT
(cd "$here" && go build -o "$work/shardnode" ./cmd/shardnode)
common=(--bind 127.0.0.1 --save "" --appendonly no --protected-mode no --io-threads 1)
redis-server --port "$RPORT" "${common[@]}" --dir "$work" --loglevel warning >"$work/redis.log" 2>&1 &
rpid=$!
"$work/shardnode" --port "$SPORT" "${common[@]}" --dir "$work" --loglevel warning >"$work/node.log" 2>&1 &
spid=$!
for p in "$RPORT" "$SPORT"; do
  for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-cli -p "$p" ACL SETUSER bench on '>pw' '~key:*' +get +set +ping +auth '+config|get' >/dev/null
done
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
declare -A cpu
for round in $(seq "$ROUNDS"); do
  for P in $PIPELINES; do
    for user in default bench; do
      for srv in redis shardnode; do
        if [ $srv = redis ]; then port=$RPORT pid=$rpid; else port=$SPORT pid=$spid; fi
        auth=()
        [ $user = bench ] && auth=(--user bench -a pw)
        for t in set get; do
          before=$(ticks $pid)
          rps=$(redis-benchmark -p $port "${auth[@]}" -t $t -n "$REQUESTS" -c "$CLIENTS" -P "$P" -r 100000 -q 2>/dev/null | tr '\r' '\n' | grep -E "^${t^^}:" | tail -1 | awk '{print $2}')
          after=$(ticks $pid)
          us=$(awk -v a="$after" -v b="$before" -v hz="$hz" -v n="$REQUESTS" 'BEGIN{printf "%.3f", (a-b)/hz*1e6/n}')
          cpu["$srv $t P$P $user"]+="$us "
          echo "round $round $srv $t -P $P $user: $rps ops/s, $us us CPU/op"
        done
      done
    done
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
echo
printf '%-10s %-4s %-5s %12s %12s %8s\n' server test pipe default_us bench_us ratio
for srv in redis shardnode; do
  for P in $PIPELINES; do
    for t in set get; do
      d=$(echo "${cpu["$srv $t P$P default"]}" | median)
      b=$(echo "${cpu["$srv $t P$P bench"]}" | median)
      printf '%-10s %-4s %-5s %12s %12s %8s\n' $srv $t "P$P" "$d" "$b" "$(awk -v d="$d" -v b="$b" 'BEGIN{printf "%.3f", b/d}')"
    done
  done
done
