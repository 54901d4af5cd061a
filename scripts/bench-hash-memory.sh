#!/usr/bin/env bash
# Memory of many small hashes: loads N hashes of 10 small fields (HSET with
# --pipe) into redis-server and into shardnode started with the same
# settings, and prints both RSS figures (and their growth over the empty
# server) and their ratio. The issue's bound for 100k hashes is shardnode
# <= 1.5x redis-server. KIND=list loads N lists of 10 small elements
# (RPUSH) instead.
#
#   scripts/bench-hash-memory.sh            # N=100000
#   N=500000 RPORT=16390 SPORT=16391 scripts/bench-hash-memory.sh
#   KIND=list scripts/bench-hash-memory.sh
set -euo pipefail
N=${N:-100000}
KIND=${KIND:-hash}
RPORT=${RPORT:-16381}
SPORT=${SPORT:-16382}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'kill $rpid $spid 2>/dev/null || true; rm -rf "$work"' EXIT
(cd "$here" && go build -o "$work/shardnode" ./cmd/shardnode)
common=(--bind 127.0.0.1 --save "" --appendonly no --protected-mode no --dir "$work" --loglevel warning)
redis-server --port "$RPORT" "${common[@]}" >"$work/redis.log" 2>&1 &
rpid=$!
"$work/shardnode" --port "$SPORT" "${common[@]}" >"$work/node.log" 2>&1 &
spid=$!
for p in "$RPORT" "$SPORT"; do
  for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
done
if [ "$KIND" = list ]; then
  awk -v n="$N" 'BEGIN {
    for (i = 0; i < n; i++) {
      printf "*12\r\n$5\r\nRPUSH\r\n$%d\r\nuser:%d\r\n", length("user:" i), i
      for (j = 0; j < 10; j++) {
        v = "value" (i * 10 + j)
        printf "$%d\r\n%s\r\n", length(v), v
      }
    }
  }' >"$work/load.resp"
else
  awk -v n="$N" 'BEGIN {
    for (i = 0; i < n; i++) {
      printf "*22\r\n$4\r\nHSET\r\n$%d\r\nuser:%d\r\n", length("user:" i), i
      for (j = 0; j < 10; j++) {
        f = "field" j; v = "value" (i * 10 + j)
        printf "$%d\r\n%s\r\n$%d\r\n%s\r\n", length(f), f, length(v), v
      }
    }
  }' >"$work/load.resp"
fi
for target in redis shardnode; do
  port=$RPORT pid=$rpid
  [ "$target" = shardnode ] && port=$SPORT pid=$spid
  before=$(awk '/VmRSS/{print $2}' /proc/$pid/status)
  redis-cli -p "$port" --pipe <"$work/load.resp" >/dev/null
  sleep 2
  after=$(awk '/VmRSS/{print $2}' /proc/$pid/status)
  echo "$target keys=$(redis-cli -p "$port" dbsize) encoding=$(redis-cli -p "$port" object encoding user:1) rss_kb=$after rss_growth_kb=$((after - before))" | tee -a "$work/rss.txt"
done
awk '/^redis/{split($4,a,"=");r=a[2]} /^shardnode/{split($4,a,"=");s=a[2]} END{printf "RSS for %s %ss of 10 small elements: shardnode/redis = %.2f\n", "'"$N"'", "'"$KIND"'", s/r}' "$work/rss.txt"
