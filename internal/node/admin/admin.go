// Package admin holds the pure parts of the server administration
// commands: the argument grammars of SHUTDOWN, FLUSHALL/FLUSHDB, SWAPDB,
// SLOWLOG GET and MEMORY USAGE with Redis's exact error texts, the
// MEMORY STATS reply, the fixed texts of LATENCY and MEMORY DOCTOR, the
// HELP texts of CONFIG, SLOWLOG, LATENCY and MEMORY, and the HELP reply
// layout every container command shares (Redis's addReplyHelp).
package admin

import (
	"errors"
	"strconv"
	"strings"

	"github.com/shardis/shardis/internal/node/value"
	"github.com/shardis/shardis/internal/resp"
)

// Redis's error texts.
var (
	ErrSyntax       = errors.New("ERR syntax error")
	ErrNotInt       = errors.New("ERR value is not an integer or out of range")
	ErrSlowlogCount = errors.New("ERR count should be greater than or equal to -1")
	ErrSlowlogArgs  = errors.New("ERR unknown subcommand or wrong number of arguments for 'get'. Try SLOWLOG HELP.")
	ErrFirstDB      = errors.New("ERR invalid first DB index")
	ErrSecondDB     = errors.New("ERR invalid second DB index")
	ErrDBRange      = errors.New("ERR DB index is out of range")
)

func eq(a []byte, s string) bool { return strings.EqualFold(string(a), s) }

// Shutdown is SHUTDOWN's flags.
type Shutdown struct {
	NoSave, Save, Now, Force, Abort bool
}

// ParseShutdown parses the arguments after SHUTDOWN:
// [NOSAVE|SAVE] [NOW] [FORCE] [ABORT] (ABORT alone).
func ParseShutdown(args [][]byte) (Shutdown, error) {
	var o Shutdown
	for _, a := range args {
		switch {
		case eq(a, "nosave"):
			o.NoSave = true
		case eq(a, "save"):
			o.Save = true
		case eq(a, "now"):
			o.Now = true
		case eq(a, "force"):
			o.Force = true
		case eq(a, "abort"):
			o.Abort = true
		default:
			return o, ErrSyntax
		}
	}
	if (o.Abort && len(args) != 1) || (o.NoSave && o.Save) {
		return o, ErrSyntax
	}
	return o, nil
}

// ParseFlush checks FLUSHALL/FLUSHDB's optional ASYNC|SYNC (args after
// the command name).
func ParseFlush(args [][]byte) error {
	if len(args) > 1 || (len(args) == 1 && !eq(args[0], "ASYNC") && !eq(args[0], "SYNC")) {
		return ErrSyntax
	}
	return nil
}

// ParseSwapDB parses SWAPDB's two indexes for n databases.
func ParseSwapDB(a, b []byte, n int) (int, int, error) {
	x, ok := value.ParseInt(a)
	if !ok || x != int64(int32(x)) {
		return 0, 0, ErrFirstDB
	}
	y, ok := value.ParseInt(b)
	if !ok || y != int64(int32(y)) {
		return 0, 0, ErrSecondDB
	}
	if x < 0 || y < 0 || x >= int64(n) || y >= int64(n) {
		return 0, 0, ErrDBRange
	}
	return int(x), int(y), nil
}

// ParseSlowlogCount parses SLOWLOG GET's arguments after GET: at most
// the count (default 10; -1 means all, returned as -1).
func ParseSlowlogCount(args [][]byte) (int64, error) {
	switch len(args) {
	case 0:
		return 10, nil
	case 1:
		n, ok := value.ParseInt(args[0])
		if !ok || n < -1 {
			return 0, ErrSlowlogCount
		}
		return n, nil
	}
	return 0, ErrSlowlogArgs
}

// ParseMemoryUsage checks MEMORY USAGE's options after the key:
// [SAMPLES count].
func ParseMemoryUsage(args [][]byte) error {
	for i := 0; i < len(args); i++ {
		if !eq(args[i], "samples") || i+1 >= len(args) {
			return ErrSyntax
		}
		n, ok := value.ParseInt(args[i+1])
		if !ok {
			return ErrNotInt
		}
		if n < 0 {
			return ErrSyntax
		}
		i++
	}
	return nil
}

// DBStat is one non-empty database of MEMORY STATS.
type DBStat struct {
	ID            int
	Keys, Expires int64
}

// AppendMemoryStats appends MEMORY STATS's reply for used and peak bytes
// and the non-empty databases.
func AppendMemoryStats(b []byte, proto int, used, peak int64, dbs []DBStat) []byte {
	var keys int64
	for _, d := range dbs {
		keys += d.Keys
	}
	kv := func(name string, v int64) {
		b = resp.AppendBulkString(b, name)
		b = resp.AppendInt(b, v)
	}
	b = resp.AppendMapLen(b, proto, 9+len(dbs))
	kv("peak.allocated", peak)
	kv("total.allocated", used)
	for _, name := range []string{"startup.allocated", "replication.backlog", "clients.slaves", "clients.normal", "aof.buffer"} {
		kv(name, 0)
	}
	for _, d := range dbs {
		b = resp.AppendBulkString(b, "db."+strconv.Itoa(d.ID))
		b = resp.AppendMapLen(b, proto, 2)
		kv("overhead.hashtable.main", d.Keys*32)
		kv("overhead.hashtable.expires", d.Expires*32)
	}
	kv("keys.count", keys)
	kv("dataset.bytes", used)
	return b
}

// AppendHelp appends a container command's HELP reply as Redis's
// addReplyHelp does: a header, the lines, and HELP's own entry.
func AppendHelp(b []byte, name string, lines []string) []byte {
	b = resp.AppendArrayLen(b, len(lines)+3)
	b = resp.AppendSimple(b, name+" <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, l := range lines {
		b = resp.AppendSimple(b, l)
	}
	b = resp.AppendSimple(b, "HELP")
	return resp.AppendSimple(b, "    Prints this help.")
}
