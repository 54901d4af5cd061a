package info

import (
	"strings"
	"testing"
	"time"
)

func TestRenderSelectsSections(t *testing.T) {
	write := func(sec Section, b *strings.Builder) {
		if sec == Stats {
			Field(b, "x", 1)
		}
	}
	headers := func(out string) string {
		var hs []string
		for _, l := range strings.Split(out, "\r\n") {
			if strings.HasPrefix(l, "# ") {
				hs = append(hs, l[2:])
			}
		}
		return strings.Join(hs, ",")
	}
	tests := []struct {
		args []string
		want string
	}{
		{nil, "Server,Clients,Memory,Persistence,Stats,Replication,CPU,Modules,Errorstats,Cluster,Keyspace"},
		{[]string{"default"}, "Server,Clients,Memory,Persistence,Stats,Replication,CPU,Modules,Errorstats,Cluster,Keyspace"},
		{[]string{"all"}, "Server,Clients,Memory,Persistence,Stats,Replication,CPU,Modules,Commandstats,Errorstats,Latencystats,Cluster,Keyspace"},
		{[]string{"EVERYTHING"}, "Server,Clients,Memory,Persistence,Stats,Replication,CPU,Modules,Commandstats,Errorstats,Latencystats,Cluster,Keyspace"},
		{[]string{"keyspace", "CPU"}, "CPU,Keyspace"}, // Redis's order, not the arguments'
		{[]string{"modules"}, "Modules"},
		{[]string{"commandstats", "default"}, "Server,Clients,Memory,Persistence,Stats,Replication,CPU,Modules,Commandstats,Errorstats,Cluster,Keyspace"},
		{[]string{"nosuch"}, ""},
	}
	for _, tt := range tests {
		var args [][]byte
		for _, a := range tt.args {
			args = append(args, []byte(a))
		}
		if got := headers(Render(args, write)); got != tt.want {
			t.Errorf("INFO %v: sections %q, want %q", tt.args, got, tt.want)
		}
	}
	if got := Render([][]byte{[]byte("cpu"), []byte("stats")}, write); got != "# Stats\r\nx:1\r\n\r\n# CPU\r\n" {
		t.Errorf("layout %q", got)
	}
}

func TestFieldAndHuman(t *testing.T) {
	var b strings.Builder
	fields(&b, "s", "v", "i", 3, "i64", int64(-4), "f", 1.0, "t", true, "n", false, "u", uint8(7))
	if want := "s:v\r\ni:3\r\ni64:-4\r\nf:1.00\r\nt:1\r\nn:0\r\nu:7\r\n"; b.String() != want {
		t.Errorf("fields %q, want %q", b.String(), want)
	}
	for n, want := range map[int64]string{0: "0B", 1023: "1023B", 1024: "1.00K", 1536: "1.50K", 1 << 20: "1.00M", 3 << 30: "3.00G", 1 << 40: "1.00T", 1 << 50: "1.00P", 1 << 60: "1024.00P"} {
		if got := BytesToHuman(n); got != want {
			t.Errorf("BytesToHuman(%d) = %q, want %q", n, got, want)
		}
	}
	if got := Safe("a#b:c\r\nd"); got != "a_b_c__d" {
		t.Errorf("Safe: %q", got)
	}
}

func TestStatLines(t *testing.T) {
	var b strings.Builder
	WriteCommandStats(&b, []CommandStat{{Name: "get", Calls: 4, Usec: 10}, {Name: "idle"}, {Name: "config|set", Failed: 1}})
	WriteErrorStats(&b, map[string]int64{"WRONGTYPE": 2, "ERR": 1})
	WriteKeyspace(&b, []DB{{Index: 0, Keys: 2, Expires: 1, AvgTTL: 5}, {Index: 1}, {Index: 3, Expires: 1}})
	want := "cmdstat_get:calls=4,usec=10,usec_per_call=2.50,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_config|set:calls=0,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=1\r\n" +
		"errorstat_ERR:count=1\r\nerrorstat_WRONGTYPE:count=2\r\n" +
		"db0:keys=2,expires=1,avg_ttl=5\r\ndb3:keys=0,expires=1,avg_ttl=0\r\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestState(t *testing.T) {
	var s State
	t0 := time.Unix(100, 0)
	if got := s.Ops(t0, 10); got != 0 {
		t.Fatalf("first sample: %d", got)
	}
	if got := s.Ops(t0.Add(50*time.Millisecond), 1000); got != 0 {
		t.Fatalf("a sample under 100ms changes nothing: %d", got)
	}
	if got := s.Ops(t0.Add(500*time.Millisecond), 510); got != 1000 {
		t.Fatalf("rate %d, want 1000", got)
	}
	if s.Peak(5) != 5 || s.Peak(3) != 5 || s.Peak(9) != 9 {
		t.Fatal("peak does not keep the maximum")
	}
	s.ResetPeak()
	if s.Peak(2) != 2 {
		t.Fatal("ResetPeak")
	}
}

// TestSectionFieldCounts pins each section's field count, so that a lost
// or duplicated field shows.
func TestSectionFieldCounts(t *testing.T) {
	count := func(w func(b *strings.Builder)) int {
		var b strings.Builder
		w(&b)
		return strings.Count(b.String(), "\r\n")
	}
	for name, c := range map[string]struct{ got, want int }{
		"server":      {count(ServerInfo{}.Write), 25},
		"clients":     {count(ClientsInfo{}.Write), 8},
		"memory":      {count(MemoryInfo{}.Write), 51},
		"persistence": {count(PersistenceInfo{}.Write), 30},
		"stats":       {count(StatsInfo{}.Write), 50},
		"replication": {count(func(b *strings.Builder) { WriteLoneMaster(b, "id", 1) }), 11},
		"cpu":         {count(WriteCPU), 6},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d fields, want %d", name, c.got, c.want)
		}
	}
}
