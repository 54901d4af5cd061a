package sentinel

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

const sampleConf = `# my sentinel
port 26400
dir /tmp
sentinel monitor mymaster 127.0.0.1 6379 2
sentinel down-after-milliseconds mymaster 1000
sentinel failover-timeout mymaster 5000
sentinel parallel-syncs mymaster 2
sentinel auth-pass mymaster "se cret"
`

func TestParseRenderRoundTrip(t *testing.T) {
	f, err := ParseFile([]byte(sampleConf))
	if err != nil {
		t.Fatal(err)
	}
	if f.Port != 26400 || f.Dir != "/tmp" || len(f.Config.Masters) != 1 {
		t.Fatalf("%+v", f)
	}
	mc := f.Config.Masters[0]
	if mc.DownAfter != time.Second || mc.FailoverTimeout != 5*time.Second || mc.ParallelSyncs != 2 ||
		mc.AuthPass != "se cret" || mc.Quorum != 2 {
		t.Fatalf("%+v", mc)
	}
	m, err := NewMachine(f.Config, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config()
	c.CurrentEpoch = 7
	c.Masters[0].ConfigEpoch = 3
	c.Masters[0].LeaderEpoch = 7
	c.Masters[0].KnownReplicas = []Addr{{"127.0.0.1", 6380}}
	c.Masters[0].KnownSentinels = []KnownSentinel{{Addr{"127.0.0.1", 26401}, strings.Repeat("b", 40)}}
	out := Render([]byte(sampleConf), c, 26400)
	// Existing lines are rewritten in place (here: unchanged), new state
	// is appended after the marker.
	if !strings.HasPrefix(string(out), sampleConf+generatedMarker+"\nsentinel myid ") {
		t.Fatalf("first lines not kept:\n%s", out)
	}
	g, err := ParseFile(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if g.Config.MyID != m.MyID() || g.Config.CurrentEpoch != 7 {
		t.Fatalf("%+v", g.Config)
	}
	gm := g.Config.Masters[0]
	gm.Leader = ""
	want := c.Masters[0]
	want.Leader = ""
	if !reflect.DeepEqual(gm, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", gm, want)
	}
	// Rendering twice is stable.
	if again := Render(out, c, 26400); string(again) != string(out) {
		t.Fatalf("not idempotent:\n%s\n---\n%s", out, again)
	}
}

func TestParseFileErrors(t *testing.T) {
	for _, bad := range []string{
		"sentinel monitor m 127.0.0.1 6379 0",
		"sentinel monitor m 127.0.0.1 notaport 2",
		"sentinel down-after-milliseconds nosuch 1000",
		"sentinel monitor m 127.0.0.1 6379 2\nsentinel down-after-milliseconds m -1",
		"sentinel monitor m 127.0.0.1 6379 2\nsentinel monitor m 127.0.0.1 6380 2",
		"sentinel myid short",
		"sentinel frobnicate",
		`sentinel monitor "m 127.0.0.1 6379 2`,
		"port 99999",
	} {
		if _, err := ParseFile([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestApplyMasters(t *testing.T) {
	f, err := ParseFile([]byte(sampleConf + "sentinel monitor other 127.0.0.1 7000 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMachine(f.Config, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(10, 0)
	m.Tick(now)
	m.Ready()
	edit := []MasterConfig{
		{Name: "mymaster", Addr: Addr{"127.0.0.1", 6379}, Quorum: 3, DownAfter: 2 * time.Second},
		{Name: "third", Addr: Addr{"127.0.0.1", 8000}, Quorum: 1},
	}
	if err := m.ApplyMasters(now, edit); err != nil {
		t.Fatal(err)
	}
	if got := m.MasterNames(); !reflect.DeepEqual(got, []string{"mymaster", "third"}) {
		t.Fatalf("masters %v", got)
	}
	c := m.Config().Masters[0]
	if c.Quorum != 3 || c.DownAfter != 2*time.Second {
		t.Fatalf("%+v", c)
	}
	rd := m.Ready()
	var types []string
	for _, e := range rd.Events {
		types = append(types, e.Type)
	}
	if !reflect.DeepEqual(types, []string{EventUnmonitor, EventMonitor}) || !rd.PersistConfig {
		t.Fatalf("events %v persist %v", types, rd.PersistConfig)
	}
	// An invalid edit changes nothing.
	if err := m.ApplyMasters(now, []MasterConfig{{Name: "x", Addr: Addr{"127.0.0.1", 1}, Quorum: 0}}); err == nil {
		t.Fatal("invalid edit accepted")
	}
	if got := m.MasterNames(); len(got) != 2 {
		t.Fatalf("invalid edit half-applied: %v", got)
	}
}

func TestParseFileMasterDirectivesBeforeMonitor(t *testing.T) {
	f, err := ParseFile([]byte("sentinel down-after-milliseconds m 2000\nsentinel monitor m 10.0.0.1 30000 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Config.Masters[0].DownAfter != 2*time.Second {
		t.Fatalf("%+v", f.Config.Masters[0])
	}
}

func TestRenderInPlace(t *testing.T) {
	orig := "# head\nsentinel down-after-milliseconds m 2000\nport 1\nsentinel monitor m 10.0.0.1 30000 2\n" +
		"sentinel known-replica m 10.0.0.1 30001\nsentinel known-replica m 10.0.0.1 30002\nport 2\n"
	c := Config{MyID: strings.Repeat("a", 40), Masters: []MasterConfig{{Name: "m", Addr: Addr{"10.0.0.1", 30005},
		Quorum: 3, DownAfter: 2 * time.Second, KnownReplicas: []Addr{{"10.0.0.1", 30001}}}}}
	got := string(Render([]byte(orig), c, 7))
	want := "# head\nsentinel down-after-milliseconds m 2000\nport 7\nsentinel monitor m 10.0.0.1 30005 3\n" +
		"sentinel known-replica m 10.0.0.1 30001\n" + generatedMarker + "\nsentinel myid " + strings.Repeat("a", 40) +
		"\nsentinel deny-scripts-reconfig no\nsentinel resolve-hostnames no\nsentinel announce-hostnames no\n" +
		"sentinel config-epoch m 0\nsentinel leader-epoch m 0\nsentinel current-epoch 0\n"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}
