package cluster

import (
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// normalizeConf blanks the fields a reload does not keep byte for byte:
// ping-sent and pong-recv (reloaded as "now" when non-zero) and the link
// state (no links after a restart), and sorts the node lines (their
// order is the node table's, a hash order in Redis); vars stays last.
func normalizeConf(text string) string {
	var out []string
	vars := ""
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if f[0] == "vars" {
			vars = l
			continue
		}
		if len(f) >= 8 {
			f[4], f[5], f[7] = "P", "P", "L"
		}
		out = append(out, strings.Join(f, " "))
	}
	slices.Sort(out)
	return strings.Join(append(out, vars), "\n")
}

func reload(t *testing.T, now time.Time, conf string, cfg Config) *Machine {
	t.Helper()
	m, err := New(cfg, rand.New(rand.NewPCG(9, 9)))
	if err != nil {
		t.Fatal(err)
	}
	m.Ready()
	if err := m.LoadNodesConf(now, conf); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestNodesConfRoundTrip(t *testing.T) {
	w := newCluster(t, 4, 3, nil)
	r := w.nodes[3]
	if err := r.m.Replicate(w.now, w.nodes[0].m.MyID()); err != nil {
		t.Fatal(err)
	}
	m1 := w.nodes[1].m
	if err := m1.SetSlot(w.now, "6000", "migrating", w.nodes[2].m.MyID()); err != nil {
		t.Fatal(err)
	}
	if err := m1.SetSlot(w.now, "10", "importing", w.nodes[0].m.MyID()); err != nil {
		t.Fatal(err)
	}
	w.pump()
	w.run(15 * time.Second) // epochs settle, the replica is known everywhere
	for _, sn := range w.nodes {
		conf := sn.m.RenderNodesConf()
		if normalizeConf(conf) != normalizeConf(sn.conf) {
			t.Fatalf("node %d: the last saved nodes.conf is stale:\n%s\nvs\n%s", sn.idx, sn.conf, conf)
		}
		if !strings.HasSuffix(conf, "vars currentEpoch "+itoa(sn.m.CurrentEpoch())+" lastVoteEpoch 0\n") {
			t.Fatalf("vars line: %q", conf)
		}
		cfg := sn.m.Config()
		cfg.Name = ""
		m := reload(t, w.now, conf, cfg)
		if got := normalizeConf(m.RenderNodesConf()); got != normalizeConf(conf) {
			t.Fatalf("node %d: reload differs:\n%s\nvs\n%s", sn.idx, got, normalizeConf(conf))
		}
		if m.MyID() != sn.m.MyID() || m.CurrentEpoch() != sn.m.CurrentEpoch() ||
			m.Myself().ConfigEpoch != sn.m.Myself().ConfigEpoch || m.IsMaster() != sn.m.IsMaster() {
			t.Fatalf("node %d: reload lost id/epochs/role", sn.idx)
		}
		for s := 0; s < NumSlots; s++ {
			a, _ := m.SlotOwner(s)
			b, _ := sn.m.SlotOwner(s)
			if a.ID != b.ID {
				t.Fatalf("node %d: slot %d owner %s after reload, was %s", sn.idx, s, a.ID, b.ID)
			}
		}
		rd := m.Ready()
		if sn == r {
			want := RoleChange{Master: w.nodes[0].m.MyID(), IP: w.nodes[0].ip, Port: w.nodes[0].port}
			if rd.RoleChange == nil || *rd.RoleChange != want {
				t.Fatalf("reloaded replica: role change %+v, want %+v", rd.RoleChange, want)
			}
		} else if rd.RoleChange != nil {
			t.Fatalf("reloaded master asks for a role change %+v", rd.RoleChange)
		}
		if sn.idx == 1 {
			if n, ok := m.IsMigrating(6000); !ok || n.ID != w.nodes[2].m.MyID() {
				t.Fatal("migrating slot lost on reload")
			}
			if n, ok := m.IsImporting(10); !ok || n.ID != w.nodes[0].m.MyID() {
				t.Fatal("importing slot lost on reload")
			}
		}
	}
}

func TestRestartedNodeRejoins(t *testing.T) {
	// Node 2 restarts from its nodes.conf with the same address: the
	// others see the same id; it is a master with its slots again and the
	// cluster returns to ok.
	w := newCluster(t, 3, 3, nil)
	conf := w.nodes[2].conf
	cfg := w.nodes[2].m.Config()
	w.crash(2)
	w.run(3 * time.Second)
	m := reload(t, w.now, conf, cfg)
	w.nodes[2].m = m
	w.nodes[2].down = false
	w.pump()
	w.until(20*time.Second, "cluster ok with the restarted node", func() bool {
		for _, sn := range w.nodes {
			if sn.m.State() != ClusterOK {
				return false
			}
		}
		return w.allKnow()
	})
	if len(w.nodes[0].m.KnownNodes()) != 3 {
		t.Fatal("the restarted node came back under a new id")
	}
}

func TestLoadRedisNodesConf(t *testing.T) {
	for _, f := range []struct {
		file, me, role string
	}{
		{"testdata/nodes-redis-7.0.15.conf", "7de97835efeb0df9605347d99f770ccb8dac2834", ""},
		{"testdata/nodes-redis-7.0.15-replica.conf", "c7f1b48210e59058322879560f2e1290f713153c", "7de97835efeb0df9605347d99f770ccb8dac2834"},
	} {
		t.Run(f.file, func(t *testing.T) {
			raw, err := os.ReadFile(f.file)
			if err != nil {
				t.Fatal(err)
			}
			cfg := DefaultConfig()
			cfg.Port = 30001
			cfg.CPort = 40001
			cfg.Hostname = "host30001.example"
			if f.role != "" {
				cfg.Port, cfg.CPort, cfg.Hostname = 30004, 40004, "host30004.example"
			}
			now := time.UnixMilli(1796159790000)
			m := reload(t, now, string(raw), cfg)
			if m.MyID() != f.me || m.CurrentEpoch() != 3 || m.LastVoteEpoch() != 0 {
				t.Fatalf("id %s epoch %d", m.MyID(), m.CurrentEpoch())
			}
			if got := len(m.KnownNodes()); got != 4 {
				t.Fatalf("%d nodes", got)
			}
			owner := func(s int) string { o, _ := m.SlotOwner(s); return o.ID }
			if owner(0) != "7de97835efeb0df9605347d99f770ccb8dac2834" || owner(5461) != "8501efdca2971a33f18771939b6c76b8c7977e3d" ||
				owner(16383) != "46d7eb1e759d27b3ab2eace24c3ec738e85b8c1f" {
				t.Fatal("slot owners")
			}
			n, _ := m.Node("8501efdca2971a33f18771939b6c76b8c7977e3d")
			if n.IP != "127.0.0.1" || n.Port != 30002 || n.CPort != 40002 || n.Hostname != "host30002.example" || n.ConfigEpoch != 3 {
				t.Fatalf("node 30002: %+v", n)
			}
			rep, _ := m.Node("c7f1b48210e59058322879560f2e1290f713153c")
			if rep.Master != "7de97835efeb0df9605347d99f770ccb8dac2834" || rep.Flags&FlagSlave == 0 || rep.ConfigEpoch != 1 {
				t.Fatalf("replica: %+v", rep)
			}
			if f.role == "" {
				if mig, ok := m.IsMigrating(100); !ok || mig.ID != "8501efdca2971a33f18771939b6c76b8c7977e3d" {
					t.Fatal("open slot lost")
				}
				if !m.IsMaster() {
					t.Fatal("role")
				}
			} else if m.IsMaster() || m.Myself().Master != f.role {
				t.Fatal("replica role lost")
			}
			// Our rendering of the same state is Redis's, byte for byte,
			// once times and link states are blanked.
			if got, want := normalizeConf(m.RenderNodesConf()), normalizeConf(string(raw)); got != want {
				t.Fatalf("render differs:\n%s\nvs\n%s", got, want)
			}
		})
	}
}

func TestLoadCorruptNodesConf(t *testing.T) {
	good := "7de97835efeb0df9605347d99f770ccb8dac2834 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-5460\n"
	cases := map[string]string{
		"no myself":        "7de97835efeb0df9605347d99f770ccb8dac2834 127.0.0.1:30001@40001 master - 0 0 1 connected 0-5460\n",
		"short line":       "7de97835efeb0df9605347d99f770ccb8dac2834 127.0.0.1:30001@40001 myself,master - 0 0 1\n",
		"bad id":           "7DE97835efeb0df9605347d99f770ccb8dac2834 127.0.0.1:30001@40001 myself,master - 0 0 1 connected\n",
		"short id":         "7de97835 127.0.0.1:30001@40001 myself,master - 0 0 1 connected\n",
		"no port":          "7de97835efeb0df9605347d99f770ccb8dac2834 127.0.0.1 myself,master - 0 0 1 connected\n",
		"unknown flag":     "7de97835efeb0df9605347d99f770ccb8dac2834 127.0.0.1:30001@40001 myself,boss - 0 0 1 connected\n",
		"slot range":       "7de97835efeb0df9605347d99f770ccb8dac2834 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-16384\n",
		"slot number":      "7de97835efeb0df9605347d99f770ccb8dac2834 127.0.0.1:30001@40001 myself,master - 0 0 1 connected x\n",
		"open slot":        "7de97835efeb0df9605347d99f770ccb8dac2834 127.0.0.1:30001@40001 myself,master - 0 0 1 connected [99999->-8501efdca2971a33f18771939b6c76b8c7977e3d]\n",
		"open slot id":     "7de97835efeb0df9605347d99f770ccb8dac2834 127.0.0.1:30001@40001 myself,master - 0 0 1 connected [5->-85]\n",
		"bad master":       "7de97835efeb0df9605347d99f770ccb8dac2834 127.0.0.1:30001@40001 myself,slave zzz 0 0 1 connected\n",
		"vars odd":         good + "vars currentEpoch\n",
		"truncated":        good[:60] + "\n",
		"two myself":       good + "8501efdca2971a33f18771939b6c76b8c7977e3d 127.0.0.1:30002@40002 myself,master - 0 0 1 connected\n",
		"blank lines only": "\n\n",
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Port = 30001
			m, _ := New(cfg, rand.New(rand.NewPCG(1, 1)))
			before := m.MyID()
			err := m.LoadNodesConf(time.Unix(1, 0), text)
			if !errors.Is(err, ErrCorruptConfig) {
				t.Fatalf("err %v", err)
			}
			if m.MyID() != before || len(m.KnownNodes()) != 1 {
				t.Fatal("a failed load changed the machine")
			}
		})
	}
	// Old files without the bus port get port+10000; blank lines and
	// unknown vars are skipped; a replica's epoch is its master's.
	cfg := DefaultConfig()
	cfg.Port = 30001
	m := reload(t, time.Unix(1, 0), "\n"+strings.Replace(good, "@40001", "", 1)+
		"8501efdca2971a33f18771939b6c76b8c7977e3d 127.0.0.1:30002 slave 7de97835efeb0df9605347d99f770ccb8dac2834 0 0 9 connected\n"+
		"vars currentEpoch 7 lastVoteEpoch 2 somethingElse 3\n", cfg)
	n, _ := m.Node("8501efdca2971a33f18771939b6c76b8c7977e3d")
	if n.CPort != 40002 || n.ConfigEpoch != 1 || m.CurrentEpoch() != 7 || m.LastVoteEpoch() != 2 {
		t.Fatalf("%+v epoch %d vote %d", n, m.CurrentEpoch(), m.LastVoteEpoch())
	}
	if r, _ := m.Replicas("7de97835efeb0df9605347d99f770ccb8dac2834", false); len(r) != 1 {
		t.Fatal("replica not attached")
	}
	if err := m.LoadNodesConf(time.Unix(1, 0), ""); err != nil {
		t.Fatal("empty text must be a no-op")
	}
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }

func TestVerifyWithData(t *testing.T) {
	loc := &fakeLocal{keys: map[int]int{5: 2, 6000: 1, 7: 1}}
	cfg := DefaultConfig()
	cfg.Port = 30001
	cfg.Local = loc
	raw, err := os.ReadFile("testdata/nodes-redis-7.0.15.conf")
	if err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(1796159790000)
	m := reload(t, now, string(raw), cfg)
	m.Ready()
	// Slot 5 is mine already; 6000 belongs to 8501ef...: importing; free
	// slots cannot be tested on this full file, so free one first.
	if err := m.DelSlots(now, "7"); err != nil {
		t.Fatal(err)
	}
	m.Ready()
	m.VerifyWithData(now)
	rd := m.Ready()
	if !rd.SaveConfig || !rd.Fsync {
		t.Fatal("not saved")
	}
	if o, _ := m.SlotOwner(7); o.ID != m.MyID() {
		t.Fatal("unassigned slot with keys not taken")
	}
	if n, ok := m.IsImporting(6000); !ok || n.ID != "8501efdca2971a33f18771939b6c76b8c7977e3d" {
		t.Fatal("foreign slot with keys not importing")
	}
	if _, ok := m.IsImporting(5); ok {
		t.Fatal("own slot set importing")
	}
	m.VerifyWithData(now)
	if m.Ready().SaveConfig {
		t.Fatal("a second pass changed something")
	}
}

// A replica started from its nodes.conf has its cluster state computed in
// the step that gives the node its replication target, as Redis's
// clusterCron calls replicationSetMaster and clusterUpdateState in one
// step: a read served once the replication started is never CLUSTERDOWN
// for a state not yet computed (Redis's cluster suite
// 17-diskless-load-swapdb read one within 100 ms of the restart). A
// master started the same way still waits the writable delay.
func TestReloadedReplicaStateWithItsRole(t *testing.T) {
	w := newCluster(t, 4, 3, nil)
	r := w.nodes[3]
	if err := r.m.Replicate(w.now, w.nodes[0].m.MyID()); err != nil {
		t.Fatal(err)
	}
	w.pump()
	w.run(15 * time.Second)
	cfg := r.m.Config()
	cfg.Name = ""
	m := reload(t, w.now, r.m.RenderNodesConf(), cfg)
	rd := m.Ready()
	if rd.RoleChange == nil || rd.RoleChange.Master != w.nodes[0].m.MyID() {
		t.Fatalf("role change %+v, want replica of %s", rd.RoleChange, w.nodes[0].m.MyID())
	}
	if rd.State != ClusterOK || m.State() != ClusterOK {
		t.Fatalf("replica's state in the Ready that starts its replication: %v (machine %v), want ok", rd.State, m.State())
	}
	mcfg := w.nodes[0].m.Config()
	mcfg.Name = ""
	mm := reload(t, w.now, w.nodes[0].m.RenderNodesConf(), mcfg)
	if mm.State() != ClusterFail {
		t.Fatalf("reloaded master's state %v, want fail during the writable delay", mm.State())
	}
	mm.Tick(w.now.Add(writableDelay))
	if mm.State() != ClusterOK {
		t.Fatalf("reloaded master's state %v after the writable delay, want ok", mm.State())
	}
}
