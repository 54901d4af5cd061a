#!/usr/bin/env bash
# Instructions per command of a server, independent of the machine's load:
# runs the server under valgrind --tool=callgrind, warms it up, zeroes the
# counters, runs redis-benchmark (one connection), dumps, and prints the
# user-space instructions per command: the total, and for a Go binary the
# part in shardis's code and in the Go runtime.
#
#   scripts/callgrind-per-op.sh [-t incr] [-n 20000] [-P 1] [-p 21990] BINARY [server args...]
#
# BINARY is a shardnode (run with --io-threads 1) or redis-server.
# GODEBUG=asyncpreemptoff=1 is set: callgrind aborts on the preemption
# signals of Go 1.14+. The runtime's share moves with scheduling (idle
# spinning between requests), so compare the shardis column across builds.
set -eu
test=incr n=20000 pipeline=1 port=21990
while getopts "t:n:P:p:" o; do
  case $o in
    t) test=$OPTARG ;; n) n=$OPTARG ;; P) pipeline=$OPTARG ;; p) port=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
bin=$1
shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
extra=()
case $(basename "$bin") in redis-server*) ;; *) extra=(--io-threads 1) ;; esac
GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file="$work/cg.%p" \
  "$bin" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" "${extra[@]}" "$@" >"$work/vg.log" 2>&1 &
vpid=$!
for _ in $(seq 300); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.2; done
redis-benchmark -p "$port" -t "$test" -n 2000 -c 1 -q >/dev/null 2>&1
callgrind_control -z "$vpid" >/dev/null 2>&1
redis-benchmark -p "$port" -t "$test" -n "$n" -c 1 -P "$pipeline" -q >/dev/null 2>&1
callgrind_control -d "$vpid" >/dev/null 2>&1
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || kill "$vpid"
wait "$vpid" || true
dump=$(ls "$work"/cg.*.1)
python3 - "$dump" "$n" "$test" "$pipeline" "$bin" <<'PY'
import re, sys
path, n = sys.argv[1], float(sys.argv[2])
names, cur, skip = {}, None, False
cats = {"shardis": 0, "go-runtime": 0, "other": 0}
for line in open(path):
    line = line.rstrip("\n")
    if line.startswith("fn="):
        m = re.match(r"fn=\((\d+)\)(?: (.*))?", line)
        if m.group(2):
            names[m.group(1)] = m.group(2)
        cur = names.get(m.group(1), "")
    elif line.startswith("cfn="):
        m = re.match(r"cfn=\((\d+)\)(?: (.*))?", line)
        if m and m.group(2):
            names[m.group(1)] = m.group(2)
    elif line.startswith("calls="):
        skip = True
    elif line[:1] and line[0] in "0123456789+-*":
        if skip:
            skip = False
            continue
        cost = int(line.split()[-1])
        if "shardis" in cur:
            cats["shardis"] += cost
        elif cur.startswith(("runtime.", "internal/runtime", "gogo", "aeshash", "memeqbody", "cmpbody", "indexbyte", "time.", "sync", "internal/sync")):
            cats["go-runtime"] += cost
        else:
            cats["other"] += cost
total = sum(cats.values())
print("%s -t %s -P %s: %.0f instructions/op (shardis %.0f, go-runtime %.0f, other %.0f)" % (
    sys.argv[5], sys.argv[3], sys.argv[4], total / n, cats["shardis"] / n, cats["go-runtime"] / n, cats["other"] / n))
PY
