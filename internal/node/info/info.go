// Package info renders the node's INFO reply as Redis 7.0 prints it: the
// section order and titles, which arguments select which sections, and
// each section's field names and order. The node fills a typed struct per
// section with the values only it knows; everything else (the fields
// shardnode reports as constants, their formatting) is here, as data.
//
// host.go holds the few probes of the process and machine that INFO
// reports (uname, resident set size, total memory, CPU usage); the rest
// of the package is pure.
package info

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Section is one INFO section.
type Section int

// The sections, in Redis 7.0's order.
const (
	Server Section = iota
	Clients
	Memory
	Persistence
	Stats
	Replication
	CPU
	Modules
	Commandstats
	Errorstats
	Latencystats
	Cluster
	Keyspace
)

// sections are the titles and the argument names that select each.
var sections = [...]struct {
	title string
	names []string
}{
	Server:       {"Server", []string{"server"}},
	Clients:      {"Clients", []string{"clients"}},
	Memory:       {"Memory", []string{"memory"}},
	Persistence:  {"Persistence", []string{"persistence"}},
	Stats:        {"Stats", []string{"stats"}},
	Replication:  {"Replication", []string{"replication"}},
	CPU:          {"CPU", []string{"cpu"}},
	Modules:      {"Modules", []string{"module_list", "modules"}},
	Commandstats: {"Commandstats", []string{"commandstats"}},
	Errorstats:   {"Errorstats", []string{"errorstats"}},
	Latencystats: {"Latencystats", []string{"latencystats"}},
	Cluster:      {"Cluster", []string{"cluster"}},
	Keyspace:     {"Keyspace", []string{"keyspace"}},
}

// defaults are INFO's sections without arguments or with "default"
// (Redis 7.0's genInfoSectionDict).
var defaults = []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu", "module_list", "errorstats", "cluster", "keyspace"}

// Render renders INFO for the given section arguments: each selected
// section's header, then what write puts in it (write may write nothing:
// an empty section keeps its header, as Modules and Latencystats do).
func Render(args [][]byte, write func(sec Section, b *strings.Builder)) string {
	want := map[string]bool{}
	all := false
	if len(args) == 0 {
		for _, n := range defaults {
			want[n] = true
		}
	}
	for _, a := range args {
		switch n := strings.ToLower(string(a)); n {
		case "default":
			for _, d := range defaults {
				want[d] = true
			}
		case "all", "everything":
			all = true
		default:
			want[n] = true
		}
	}
	var b strings.Builder
	for sec, s := range sections {
		if !all && !slices.ContainsFunc(s.names, func(n string) bool { return want[n] }) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + s.title + "\r\n")
		write(Section(sec), &b)
	}
	return b.String()
}

// Field writes "name:value\r\n"; a float64 has two decimals, as Redis's
// %.2f fields.
func Field(b *strings.Builder, name string, v any) {
	b.WriteString(name)
	b.WriteByte(':')
	switch x := v.(type) {
	case string:
		b.WriteString(x)
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(strconv.FormatFloat(x, 'f', 2, 64))
	case bool:
		b.WriteString(strconv.Itoa(b01(x)))
	default:
		fmt.Fprint(b, x)
	}
	b.WriteString("\r\n")
}

// fields writes name, value pairs with Field.
func fields(b *strings.Builder, kv ...any) {
	for i := 0; i+1 < len(kv); i += 2 {
		Field(b, kv[i].(string), kv[i+1])
	}
}

func b01(v bool) int {
	if v {
		return 1
	}
	return 0
}

// BytesToHuman formats a byte count as Redis's bytesToHuman (100B,
// 1.50K, 2.00M ...).
func BytesToHuman(n int64) string {
	const k = 1024.0
	f := float64(n)
	if n < 1024 {
		return strconv.FormatInt(n, 10) + "B"
	}
	units := "KMGT"
	for i := range len(units) {
		if f < k*k {
			return strconv.FormatFloat(f/k, 'f', 2, 64) + units[i:i+1]
		}
		f /= k
	}
	return strconv.FormatFloat(f/k, 'f', 2, 64) + "P"
}

// Safe replaces the characters an INFO field name cannot hold (#:\r\n)
// by '_'.
func Safe(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '#', ':', '\r', '\n':
			return '_'
		}
		return r
	}, s)
}

// State is what INFO keeps between calls: the peak of used_memory and
// the instantaneous ops/sec sampler. The zero value is ready.
type State struct {
	mu   sync.Mutex
	peak int64
	// lastAt and lastCount are the previous sample of the command
	// counter; rate is the last computed ops/sec.
	lastAt    time.Time
	lastCount int64
	rate      int64
}

// Peak records used as a sample of used memory and returns the peak.
func (s *State) Peak(used int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peak = max(s.peak, used)
	return s.peak
}

// ResetPeak forgets the peak (CONFIG RESETSTAT).
func (s *State) ResetPeak() {
	s.mu.Lock()
	s.peak = 0
	s.mu.Unlock()
}

// Ops returns instantaneous_ops_per_sec given the command counter n at
// now: the rate over the last sample at least 100 ms old.
func (s *State) Ops(now time.Time, n int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastAt.IsZero() {
		s.lastAt, s.lastCount = now, n
		return 0
	}
	if d := now.Sub(s.lastAt); d >= 100*time.Millisecond {
		s.rate = int64(float64(n-s.lastCount) / d.Seconds())
		s.lastAt, s.lastCount = now, n
	}
	return s.rate
}

// CommandStat is one command's counters (INFO commandstats).
type CommandStat struct {
	Name                          string
	Calls, Usec, Rejected, Failed int64
}

// WriteCommandStats writes the commandstats lines of the commands that
// were called, rejected or failed, in the order given.
func WriteCommandStats(b *strings.Builder, stats []CommandStat) {
	for _, st := range stats {
		if st.Calls == 0 && st.Rejected == 0 && st.Failed == 0 {
			continue
		}
		per := 0.0
		if st.Calls > 0 {
			per = float64(st.Usec) / float64(st.Calls)
		}
		fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
			Safe(st.Name), st.Calls, st.Usec, per, st.Rejected, st.Failed)
	}
}

// WriteErrorStats writes one errorstat line per error code, sorted.
func WriteErrorStats(b *strings.Builder, byCode map[string]int64) {
	codes := make([]string, 0, len(byCode))
	for code := range byCode {
		codes = append(codes, code)
	}
	sort.Strings(codes)
	for _, code := range codes {
		fmt.Fprintf(b, "errorstat_%s:count=%d\r\n", Safe(code), byCode[code])
	}
}

// DB is one database's line of the Keyspace section.
type DB struct {
	Index                 int
	Keys, Expires, AvgTTL int64
}

// WriteKeyspace writes the databases that hold keys or expires.
func WriteKeyspace(b *strings.Builder, dbs []DB) {
	for _, db := range dbs {
		if db.Keys == 0 && db.Expires == 0 {
			continue
		}
		fmt.Fprintf(b, "db%d:keys=%d,expires=%d,avg_ttl=%d\r\n", db.Index, db.Keys, db.Expires, db.AvgTTL)
	}
}
