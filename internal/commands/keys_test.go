package commands

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/resp"
	"github.com/shardis/shardis/internal/testutil"
)

// keyCalls are calls whose arguments are all distinct, so that the keys
// COMMAND GETKEYS names map back to positions.
var keyCalls = []string{
	"GET k1", "SET k1 v EX 10", "SET k1 v GET", "MSET k1 v1 k2 v2", "MGET k1 k2 k3", "DEL k1 k2",
	"RENAME k1 k2", "COPY k1 k2 DB 1 REPLACE", "BITOP AND d k1 k2", "LMOVE k1 k2 LEFT RIGHT",
	"BLPOP k1 k2 0", "BZPOPMIN k1 k2 k3 1", "BLMPOP 0 2 k1 k2 LEFT", "LMPOP 2 k1 k2 RIGHT COUNT 3",
	"ZUNIONSTORE d 2 k1 k2 WEIGHTS 1 2", "ZINTERSTORE d 0 x", "EVAL s -1 k1", "ZUNION 2 k1 k2", "ZINTERCARD 2 k1 k2 LIMIT 9",
	"SINTERCARD 3 k1 k2 k3", "EVAL s 2 k1 k2 a1", "EVAL s 0 a1", "EVAL s x k1", "FCALL f 1 k1 a1",
	"XREAD COUNT 2 STREAMS k1 k2 i1 i2", "XREADGROUP GROUP g c STREAMS k1 >", "XADD k1 * f v",
	"GEORADIUS k1 1 2 3 km STORE d", "GEORADIUS k1 1 2 3 km WITHDIST STOREDIST d",
	"GEORADIUSBYMEMBER k1 m 3 km STORE d", "GEOSEARCHSTORE d k1 FROMMEMBER m BYRADIUS 1 km",
	"SORT k1 BY w GET g STORE d", "SORT k1 LIMIT 0 1 STORE d", "SORT k1 STORE d1 STORE d2", "SORT_RO k1 BY w",
	"MIGRATE h 1 k1 0 10", "MIGRATE h 1 \"\" 0 10 COPY KEYS k1 k2", "MIGRATE h 1 \"\" 0 10 AUTH p KEYS k1",
	"MIGRATE h 1 \"\" 0 10 AUTH2 u p KEYS k1 k2",
	"OBJECT ENCODING k1", "MEMORY USAGE k1", "XINFO STREAM k1", "XGROUP CREATE k1 g $", "LCS k1 k2",
	"SMOVE k1 k2 m", "PFCOUNT k1 k2", "PFMERGE d k1 k2", "WATCH k1 k2", "TOUCH k1", "EXISTS k1 k2",
	"BITFIELD k1 GET u8 0", "BITFIELD_RO k1 GET u8 0", "SPUBLISH ch m", "PUBLISH ch m", "PING", "DBSIZE",
	"SUNIONSTORE d k1 k2", "ZRANGESTORE d k1 0 1", "RESTORE k1 0 p", "GETEX k1 PERSIST", "ZMPOP 1 k1 MIN",
	"BZMPOP 0 2 k1 k2 MAX", "XAUTOCLAIM k1 g c 0 0", "OBJECT HELP", "CLIENT LIST",
}

// TestKeyPositionsAgreeWithRedis asks a real redis-server 7.0 for the keys
// of every call (COMMAND GETKEYS) and compares them with KeyPositions.
func TestKeyPositionsAgreeWithRedis(t *testing.T) {
	r := testutil.StartRedis(t)
	conn, err := net.DialTimeout("tcp", r.Addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	for _, call := range keyCalls {
		args, ok := resp.SplitArgs([]byte(call))
		if !ok {
			t.Fatalf("bad call %q", call)
		}
		_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
		req := resp.AppendCommandStrings(nil, "COMMAND", "GETKEYS")
		full := append([][]byte{[]byte("COMMAND"), []byte("GETKEYS")}, args...)
		req = resp.AppendCommand(req[:0], full...)
		if _, err := conn.Write(req); err != nil {
			t.Fatal(err)
		}
		v, err := resp.ReadValue(br)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		if !v.IsError() {
			for _, e := range v.Elems {
				want = append(want, e.Str)
			}
		}
		pos, known := KeyPositions(args)
		if !known {
			t.Errorf("%q: command not known", call)
			continue
		}
		var got []string
		for _, p := range pos {
			got = append(got, string(args[p]))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%q: KeyPositions finds %q, redis-server %q (%s)", call, got, want, v.Str)
		}
	}
}

func TestKeyPositionsUnknownCommand(t *testing.T) {
	if _, known := KeyPositions([]string{"hexpire", "k", "10", "FIELDS", "1", "f"}); known {
		t.Error("a command newer than Redis 7.0 reported as known")
	}
	if _, known := KeyPositions([]string{}); known {
		t.Error("an empty call reported as known")
	}
	// OBJECT is known; an unknown subcommand of it has no keys (the
	// server answers it with an error).
	if pos, known := KeyPositions([]string{"object", "nosuchsub", "k"}); !known || pos != nil {
		t.Errorf("unknown subcommand: %v %v", pos, known)
	}
}

func TestCovers(t *testing.T) {
	args := strings.Fields("georadius k 1 2 3 km withdist store d")
	specs := KeySpecs["georadius"]
	for p := range args {
		covered := ""
		for i := range specs {
			if Covers(&specs[i], args, p) {
				covered = specs[i].Flags
				break
			}
		}
		want := map[int]string{1: "RO access", 8: "OW update"}[p]
		if covered != want {
			t.Errorf("position %d (%s): covered by %q, want %q", p, args[p], covered, want)
		}
	}
}
