package admin

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardis/shardis/internal/resp"
)

// MonitorLine is the line MONITOR shows for a command, as Redis formats
// it: 1339518083.107412 [0 127.0.0.1:60866] "keys" "*" (source is the
// client's address, or "lua" for a script's or the master's commands).
func MonitorLine(now time.Time, db int, source string, args [][]byte) string {
	var b strings.Builder
	b.WriteString(strconv.FormatInt(now.Unix(), 10))
	b.WriteString(".")
	us := strconv.FormatInt(int64(now.Nanosecond()/1000), 10)
	b.WriteString(strings.Repeat("0", 6-len(us)) + us)
	b.WriteString(" [")
	b.WriteString(strconv.Itoa(db))
	b.WriteString(" ")
	b.WriteString(source)
	b.WriteString("]")
	for _, a := range args {
		b.WriteString(" ")
		b.WriteString(resp.Repr(a))
	}
	return b.String()
}

// SlowlogEntry is one entry of SLOWLOG GET.
type SlowlogEntry struct {
	ID       int64
	Time     int64 // Unix seconds
	Duration int64 // microseconds
	Args     []string
	Addr     string
	Name     string
}

// Slowlog is the slow log, newest first. The zero Slowlog is empty and
// ready; it is safe for concurrent use.
type Slowlog struct {
	mu      sync.Mutex
	entries []SlowlogEntry
	nextID  int64
}

// Add records e with the next ID and keeps the newest max entries.
func (l *Slowlog) Add(e SlowlogEntry, max int) {
	l.mu.Lock()
	e.ID = l.nextID
	l.nextID++
	l.entries = append([]SlowlogEntry{e}, l.entries...)
	if len(l.entries) > max {
		l.entries = l.entries[:max]
	}
	l.mu.Unlock()
}

// Entries returns a copy of the newest count entries (count < 0: all).
func (l *Slowlog) Entries(count int64) []SlowlogEntry {
	l.mu.Lock()
	entries := append([]SlowlogEntry(nil), l.entries...)
	l.mu.Unlock()
	if count >= 0 && int64(len(entries)) > count {
		entries = entries[:count]
	}
	return entries
}

// Len is SLOWLOG LEN.
func (l *Slowlog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// Reset is SLOWLOG RESET (the IDs go on).
func (l *Slowlog) Reset() {
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
}

// SlowlogArgs is a command's arguments as a slow log entry shows them:
// at most 32 (the last one then says how many more there were), each cut
// at 128 bytes, and "(redacted)" from redactFrom on (ACL SETUSER's
// username and rules, as Redis's redactClientCommandArgument).
func SlowlogArgs(args [][]byte, redactFrom int) []string {
	n := min(len(args), 32)
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		// Cut before converting: a RESTORE's 50 MB payload is not copied.
		var a string
		switch {
		case i == 31 && len(args) > 32:
			a = "... (" + strconv.Itoa(len(args)-31) + " more arguments)"
		case i >= redactFrom:
			a = "(redacted)"
		case len(args[i]) > 128:
			a = string(args[i][:128]) + "... (" + strconv.Itoa(len(args[i])-128) + " more bytes)"
		default:
			a = string(args[i])
		}
		out = append(out, a)
	}
	return out
}

// DebugObjectLine is DEBUG OBJECT's reply: the value's address, its
// encoding, its DUMP payload length without the 11-byte trailer
// (serialized), the LRU clock (24 bits shown) and the idle seconds, and
// for a list (listLen >= 0) its quicklist figures as Redis shows them for
// 128-entry nodes.
func DebugObjectLine(addr, enc string, serialized int, lru, idle int64, listLen int) string {
	extra := ""
	if listLen >= 0 {
		nodes := max(1, (listLen+127)/128)
		extra = fmt.Sprintf(" ql_nodes:%d ql_avg_node:%.2f ql_listpack_max:%d ql_compressed:%d ql_uncompressed_size:%d",
			nodes, float64(listLen)/float64(nodes), -2, 0, serialized)
	}
	return fmt.Sprintf("Value at:%s refcount:1 encoding:%s serializedlength:%d lru:%d lru_seconds_idle:%d%s",
		addr, enc, serialized, lru&0xffffff, idle, extra)
}
