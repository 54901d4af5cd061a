package shardedpool

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/testutil"
)

func TestParseTopology(t *testing.T) {
	good := "# shards\n\na 127.0.0.1:7000\n  b  [::1]:7001  \n"
	shards, err := parseTopology([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(shards) != "[{a 127.0.0.1:7000} {b [::1]:7001}]" {
		t.Fatalf("got %v", shards)
	}
	for _, bad := range []string{
		"", "# only a comment\n", "a\n", "a 127.0.0.1\n", "a 127.0.0.1:0\n",
		"a 127.0.0.1:7000 extra\n", "a 127.0.0.1:1\na 127.0.0.1:2\n",
	} {
		if _, err := parseTopology([]byte(bad)); err == nil {
			t.Errorf("parseTopology(%q) accepted", bad)
		}
	}
}

// TestTopologyFileLiveEdit: an address edit is applied without restart; a
// bad edit is rejected and the old topology stays.
func TestTopologyFileLiveEdit(t *testing.T) {
	a0, a1, b1 := newFake(t), newFake(t), newFake(t)
	path := filepath.Join(t.TempDir(), "topology.conf")
	write := func(s string) {
		t.Helper()
		// Write then rename, as editors and config managers do.
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write(fmt.Sprintf("s0 %s\ns1 %s\n", a0.addr, a1.addr))
	logs := &syncBuffer{}
	var mu sync.Mutex
	var events []SwitchEvent
	p, err := New(context.Background(), &Options{
		TopologyFile: path,
		OnSwitch: func(e SwitchEvent) {
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		},
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	var k1 string
	for i := 0; k1 == ""; i++ {
		if k := fmt.Sprint("k", i); p.ShardFor(k) == "s1" {
			k1 = k
		}
	}
	if v := p.Get(ctx, k1).Val(); v != a1.addr {
		t.Fatalf("GET answered by %s, want %s", v, a1.addr)
	}

	write(fmt.Sprintf("s0 %s\ns1 %s\n", a0.addr, b1.addr))
	testutil.WaitFor(t, 5*time.Second, "live address change", func() bool { return p.Get(ctx, k1).Val() == b1.addr })
	mu.Lock()
	st, ev := p.Stats(), append([]SwitchEvent(nil), events...)
	mu.Unlock()
	if st[1].Switches != 1 || st[0].Switches != 0 || len(ev) != 1 || ev[0].To != b1.addr {
		t.Fatalf("stats %+v events %+v", st, ev)
	}

	for _, bad := range []string{
		"s0 nonsense\n",
		fmt.Sprintf("s1 %s\ns0 %s\n", a1.addr, a0.addr),                 // reorder moves keys
		fmt.Sprintf("s0 %s\ns1 %s\ns2 %s\n", a0.addr, a1.addr, b1.addr), // new shard moves keys
	} {
		before := logs.count("topology edit rejected")
		write(bad)
		testutil.WaitFor(t, 5*time.Second, "rejection of a bad edit", func() bool {
			return logs.count("topology edit rejected") > before
		})
		if v := p.Get(ctx, k1).Val(); v != b1.addr {
			t.Fatalf("after bad edit %q, GET answered by %s", bad, v)
		}
	}
}

func TestOptionsValidation(t *testing.T) {
	ctx := context.Background()
	for _, o := range []*Options{
		nil,
		{},
		{SentinelAddrs: []string{"127.0.0.1:1"}},
		{SentinelAddrs: []string{"nonsense"}, MasterNames: []string{"a"}},
		{SentinelAddrs: []string{"127.0.0.1:1"}, MasterNames: []string{"a", "a"}},
		{Shards: []StaticShard{{"a", "127.0.0.1:1"}}, TopologyFile: "x"},
		{Shards: []StaticShard{{"a", "bad"}}},
		{Shards: []StaticShard{{"a", "127.0.0.1:1"}}, Weights: []int{1, 2}},
		{Shards: []StaticShard{{"a", "127.0.0.1:1"}}, Weights: []int{0}},
	} {
		if p, err := New(ctx, o); err == nil {
			p.Close()
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

func TestWeightsAndNamedShardsShapeTheRing(t *testing.T) {
	shards := []StaticShard{{"a", "127.0.0.1:1"}, {"b", "127.0.0.1:2"}}
	count := func(o *Options) map[string]int {
		o.Shards = shards
		o.Logger = quietLogger()
		p, err := New(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		n := map[string]int{}
		for i := range 30000 {
			n[p.ShardFor(fmt.Sprint("key", i))]++
		}
		return n
	}
	w := count(&Options{Weights: []int{1, 3}})
	if w["b"] < 2*w["a"] {
		t.Errorf("weights 1:3 gave %v", w)
	}
	unnamed, named := count(&Options{}), count(&Options{NamedShards: true})
	if fmt.Sprint(unnamed) == fmt.Sprint(named) {
		t.Errorf("named and unnamed rings place keys identically: %v", named)
	}
	jump := count(&Options{Hash: NewJumpHash(2)})
	if jump["a"] < 13000 || jump["b"] < 13000 {
		t.Errorf("jump hash gave %v", jump)
	}
}
