#!/usr/bin/env bash
# Compares shardnode with redis-server under redis-benchmark, measured in the
# same run: both servers started with the same settings, benchmarks
# alternating between them for ROUNDS rounds, unpipelined and pipelined.
# Prints ops/s, p50 and p99 per test and the shardnode/redis ratios (median
# over rounds), then the RSS of both after loading KEYS keys of 16-byte
# names and 16-byte values.
#
#   scripts/bench-vs-redis.sh                      # defaults below
#   TESTS=lpush,rpush,lpop ROUNDS=5 scripts/bench-vs-redis.sh
#   IO_THREADS= scripts/bench-vs-redis.sh          # shardnode on every CPU
#   OLD_REV=db22184 scripts/bench-vs-redis.sh      # also an older shardnode
#   PIN=1 scripts/bench-vs-redis.sh                # benchmark on CPU 0, servers on the rest
#
# OLD_REV builds shardnode from that commit as a third server ("old"), run
# in the same rounds, and prints new/old ratios as well. PIN=1 runs
# redis-benchmark under taskset on CPU 0 and the servers on the other CPUs.
#
# IO_THREADS (default 1) is passed to both servers as --io-threads: the
# threads that run clients. 1 is redis-server's default; for shardnode it
# is the number of Go Ps (its own default is one per CPU). On a small
# machine redis-benchmark needs a core of its own, so one server thread is
# the like-for-like comparison; empty leaves both servers at their default.
set -euo pipefail
TESTS=${TESTS:-set,get,incr,mset}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-50}
REQUESTS=${REQUESTS:-200000}
PIPELINES=${PIPELINES:-"1 16"}
KEYS=${KEYS:-1000000}
RPORT=${RPORT:-16379}
SPORT=${SPORT:-16380}
IO_THREADS=${IO_THREADS-1}
OLD_REV=${OLD_REV:-}
OPORT=${OPORT:-16381}
PIN=${PIN:-}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
opid=
trap 'kill $rpid $spid $opid 2>/dev/null || true; rm -rf "$work"' EXIT
(cd "$here" && go build -o "$work/shardnode" ./cmd/shardnode)
targets="redis shardnode"
if [ -n "$OLD_REV" ]; then
  mkdir "$work/old"
  git -C "$here" archive "$OLD_REV" | tar -x -C "$work/old"
  (cd "$work/old" && go build -o "$work/shardnode-old" ./cmd/shardnode)
  targets="redis shardnode old"
fi
srv=()
bench=(redis-benchmark)
if [ -n "$PIN" ]; then
  last=$(($(nproc) - 1))
  srv=(taskset -c "1-$last")
  bench=(taskset -c 0 redis-benchmark)
fi

common=(--bind 127.0.0.1 --save "" --appendonly no --protected-mode no)
[ -n "$IO_THREADS" ] && common+=(--io-threads "$IO_THREADS")
"${srv[@]}" redis-server --port "$RPORT" "${common[@]}" --dir "$work" --loglevel warning >"$work/redis.log" 2>&1 &
rpid=$!
"${srv[@]}" "$work/shardnode" --port "$SPORT" "${common[@]}" --dir "$work" --loglevel warning >"$work/node.log" 2>&1 &
spid=$!
ports="$RPORT $SPORT"
if [ -n "$OLD_REV" ]; then
  mkdir "$work/olddir"
  "${srv[@]}" "$work/shardnode-old" --port "$OPORT" "${common[@]}" --dir "$work/olddir" --loglevel warning >"$work/old.log" 2>&1 &
  opid=$!
  ports="$ports $OPORT"
fi
for p in $ports; do
  for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
done

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "redis-server: $(redis-server --version | awk '{print $3}'), go: $(go version | awk '{print $3}')"
echo "clients=$CLIENTS requests=$REQUESTS rounds=$ROUNDS tests=$TESTS io-threads=${IO_THREADS:-default} pin=${PIN:-no} old=${OLD_REV:-none} load: $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$work/results.csv"
for r in $(seq "$ROUNDS"); do
  for P in $PIPELINES; do
    for target in $targets; do
      port=$RPORT
      [ "$target" = shardnode ] && port=$SPORT
      [ "$target" = old ] && port=$OPORT
      redis-cli -p "$port" flushall >/dev/null
      "${bench[@]}" -p "$port" -c "$CLIENTS" -n "$REQUESTS" -P "$P" -t "$TESTS" -r 100000 --csv 2>/dev/null |
        tail -n +2 | tr -d '"' | awk -F, -v t="$target" -v p="$P" -v r="$r" '{print t","p","r","$1","$2","$5","$7}' >>"$work/results.csv"
    done
  done
done

# Median per (target, pipeline, test), then ratios.
awk -F, '
function median(s,   a, n, i, j, t) {
  n = split(s, a, " ")
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
  return a[int((n + 1) / 2)]
}
{ k = $2 SUBSEP $4; tests[k] = 1; rps[$1, k] = rps[$1, k] " " $5; p50[$1, k] = p50[$1, k] " " $6; p99[$1, k] = p99[$1, k] " " $7 }
END {
  printf "%-4s %-22s %12s %12s %7s %8s %8s %8s %8s %7s\n", "P", "test", "redis ops/s", "node ops/s", "ratio", "r p50", "n p50", "r p99", "n p99", "p99 x"
  for (k in tests) {
    split(k, kk, SUBSEP)
    rr = median(rps["redis", k]); nr = median(rps["shardnode", k])
    r5 = median(p50["redis", k]); n5 = median(p50["shardnode", k])
    r9 = median(p99["redis", k]); n9 = median(p99["shardnode", k])
    printf "%-4s %-22s %12.0f %12.0f %7.2f %8.3f %8.3f %8.3f %8.3f %7.2f\n", kk[1], kk[2], rr, nr, nr / rr, r5, n5, r9, n9, (r9 > 0 ? n9 / r9 : 0)
  }
}' "$work/results.csv" | sort -k1,1n -k2,2
if [ -n "$OLD_REV" ]; then
  echo "new shardnode ($(git -C "$here" rev-parse --short HEAD)) against old ($OLD_REV), medians:"
  awk -F, '
function median(s,   a, n, i, j, t) {
  n = split(s, a, " ")
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
  return a[int((n + 1) / 2)]
}
{ k = $2 SUBSEP $4; tests[k] = 1; rps[$1, k] = rps[$1, k] " " $5; p99[$1, k] = p99[$1, k] " " $7 }
END {
  printf "%-4s %-22s %12s %12s %7s %8s %8s\n", "P", "test", "old ops/s", "new ops/s", "new/old", "old p99", "new p99"
  for (k in tests) {
    split(k, kk, SUBSEP)
    o = median(rps["old", k]); n = median(rps["shardnode", k])
    printf "%-4s %-22s %12.0f %12.0f %7.2f %8.3f %8.3f\n", kk[1], kk[2], o, n, n / o, median(p99["old", k]), median(p99["shardnode", k])
  }
}' "$work/results.csv" | sort -k1,1n -k2,2
fi

if [ "$KEYS" -gt 0 ]; then
  for target in redis shardnode; do
    port=$RPORT pid=$rpid
    [ "$target" = shardnode ] && port=$SPORT pid=$spid
    redis-cli -p "$port" flushall >/dev/null
    before=$(awk '/VmRSS/{print $2}' /proc/$pid/status)
    # 16-byte keys and values, inserted with --pipe.
    awk -v n="$KEYS" 'BEGIN { for (i = 0; i < n; i++) { k = sprintf("key:%012d", i); v = sprintf("val:%012d", i); printf "*3\r\n$3\r\nSET\r\n$16\r\n%s\r\n$16\r\n%s\r\n", k, v } }' |
      redis-cli -p "$port" --pipe >/dev/null
    sleep 2
    after=$(awk '/VmRSS/{print $2}' /proc/$pid/status)
    echo "$target rss_kb_before=$before rss_kb_after=$after dbsize=$(redis-cli -p "$port" dbsize)" | tee -a "$work/rss.txt"
  done
  awk '/^redis/{split($3,a,"=");r=a[2]} /^shardnode/{split($3,a,"=");s=a[2]} END{printf "RSS with %s keys: shardnode/redis = %.2f\n", "'"$KEYS"'", s/r}' "$work/rss.txt"
fi
echo "load at end: $(cut -d" " -f1-3 /proc/loadavg)"
