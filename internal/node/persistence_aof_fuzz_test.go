package node

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/shardis/shardis/internal/node/persist"
	"github.com/shardis/shardis/internal/rdb"
)

// aofFuzzSkip lists command names the fuzzed files must not contain. The
// loader replays whatever a file holds, as Redis's does; these act outside
// the dataset (files, configuration, the process, replication) or wait,
// so they are kept out of fuzzing rather than run on the test machine.
// Blocking list and sorted-set commands are fuzzed: the loader runs them
// as if their timeout had expired.
var aofFuzzSkip = [][]byte{
	[]byte("shutdown"), []byte("debug"), []byte("config"), []byte("save"), []byte("rewriteaof"),
	[]byte("replicaof"), []byte("slaveof"), []byte("sync"), []byte("failover"), []byte("monitor"),
	[]byte("client"), []byte("acl"), []byte("module"), []byte("migrate"), []byte("script"),
	[]byte("function"), []byte("eval"), []byte("fcall"), []byte("wait"), []byte("xread"),
	[]byte("subscribe"), []byte("sleep"),
}

// aofSeeds are small append-only files: commands, MULTI/EXEC,
// annotations, truncations, and an RDB preamble.
func aofSeeds() [][]byte {
	cmd := func(args ...string) string { return string(persist.AppendCommand(nil, toBytes(args)...)) }
	var pre bytes.Buffer
	e := rdb.NewEncoder(&pre, rdb.Options{Checksum: true})
	e.Header()
	e.SelectDB(0)
	e.Key([]byte("s"), rdb.KeyMeta{Idle: -1, Freq: -1}, &rdb.Value{Kind: rdb.KindString, Str: []byte("v")})
	e.Key([]byte("l"), rdb.KeyMeta{ExpireMs: 1 << 42, Idle: -1, Freq: -1}, &rdb.Value{Kind: rdb.KindList, Elems: [][]byte{[]byte("a"), []byte("1")}})
	if err := e.Finish(); err != nil {
		panic(err)
	}
	return [][]byte{
		[]byte(cmd("SELECT", "0") + cmd("SET", "k", "v") + cmd("RPUSH", "l", "a", "b") + cmd("PEXPIREAT", "k", "99999999999999")),
		[]byte(cmd("MULTI") + cmd("INCR", "n") + cmd("HSET", "h", "f", "v") + cmd("EXEC")),
		[]byte("#TS:1700000000\r\n" + cmd("ZADD", "z", "1", "a", "2.5", "b") + cmd("SADD", "s", "1", "x")),
		[]byte(cmd("SET", "k", "v") + "*3\r\n$3\r\nSET\r\n$1\r\nk"),
		[]byte(cmd("MULTI") + cmd("DEL", "k")),
		[]byte(cmd("XADD", "st", "1-1", "f", "v") + cmd("SETRANGE", "k", "5", "x") + cmd("PFADD", "p", "a")),
		append(pre.Bytes(), cmd("LPUSH", "l", "z")...),
		[]byte("*1\r\n$-1\r\n"),
		[]byte("garbage"),
		[]byte(cmd("BLPOP", "q", "0") + cmd("BZPOPMIN", "z", "0") + cmd("BLMOVE", "q", "r", "LEFT", "RIGHT", "0") + cmd("SET", "k", "v")),
	}
}

func toBytes(args []string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

// FuzzAOFLoad feeds arbitrary files to the AOF loader through its entry
// point, loadFile (the last file of the manifest, aof-load-truncated on):
// it must return (an error or not) and never panic, and the server must
// still answer a command after it.
//
//	go test ./internal/node -run '^$' -fuzz FuzzAOFLoad -fuzztime 60s
func FuzzAOFLoad(f *testing.F) {
	for _, s := range aofSeeds() {
		f.Add(s)
	}
	cfg := NewConfig()
	for k, v := range map[string]string{"dir": f.TempDir(), "save": "", "port": "0", "aof-load-truncated": "yes"} {
		if err := cfg.Set(k, v); err != nil {
			f.Fatal(err)
		}
	}
	srv, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(f.TempDir(), "appendonly.aof.1.incr.aof")
	f.Fuzz(func(t *testing.T, data []byte) {
		lower := bytes.ToLower(data)
		for _, name := range aofFuzzSkip {
			if bytes.Contains(lower, name) {
				return
			}
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_ = srv.persist.AOF().LoadFile(path)
		c := newLoaderClient(srv)
		if err := c.replay([][]byte{[]byte("FLUSHALL")}); err != nil {
			t.Fatalf("FLUSHALL after loading: %v", err)
		}
		if err := c.replay([][]byte{[]byte("SET"), []byte("probe"), []byte("1")}); err != nil {
			t.Fatalf("SET after loading: %v", err)
		}
	})
}
