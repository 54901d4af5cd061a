package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNewClusterLayout(t *testing.T) {
	l, err := NewClusterLayout(ClusterPlan{Masters: 3, Replicas: 2, BasePort: 7000})
	if err != nil {
		t.Fatal(err)
	}
	if l.Mode != ModeCluster || l.NodeTimeoutMs != 5000 || len(l.Shards) != 3 || len(l.SentinelPorts) != 0 {
		t.Fatalf("layout = %+v", l)
	}
	// Masters 7000-7002, then master i's replicas.
	if got := strings.Join(l.NodeAddrs(), ","); got != "127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002,"+
		"127.0.0.1:7003,127.0.0.1:7004,127.0.0.1:7005,127.0.0.1:7006,127.0.0.1:7007,127.0.0.1:7008" {
		t.Errorf("addrs = %s", got)
	}
	if s := l.Shards[1]; s.Name != "shard-2" || len(s.Ports) != 3 || s.Ports[0] != 7001 || s.Ports[1] != 7005 || s.Ports[2] != 7006 {
		t.Errorf("shard-2 = %+v", s)
	}
	for _, bad := range []ClusterPlan{
		{Masters: 2, BasePort: 7000},
		{Masters: 3, Replicas: -1, BasePort: 7000},
		{Masters: 3, BasePort: 7000, NodeTimeout: 50 * time.Millisecond},
		{Masters: 3, BasePort: 55534}, // 55536's bus port is above 65535
		{Masters: 3, BasePort: 0},
	} {
		if _, err := NewClusterLayout(bad); err == nil {
			t.Errorf("NewClusterLayout(%+v) accepted", bad)
		}
	}

	dir := t.TempDir()
	l.Created = true
	if err := l.Save(dir); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, LayoutFile))
	if !strings.Contains(string(data), `"mode": "cluster"`) || strings.Contains(string(data), "sentinel") {
		t.Errorf("deploy.json:\n%s", data)
	}
	l2, err := LoadLayout(dir)
	if err != nil || l2.Mode != ModeCluster || !l2.Created || l2.Shards[2].Ports[2] != 7008 {
		t.Fatalf("reloaded %+v, %v", l2, err)
	}
	// A file from before cluster mode is a Sentinel deployment; an unknown
	// mode is refused.
	os.WriteFile(filepath.Join(dir, LayoutFile), []byte(`{"host":"127.0.0.1","shards":[{"name":"shard-1","ports":[1]}],"sentinel_ports":[2]}`), 0o644)
	if l3, err := LoadLayout(dir); err != nil || l3.Mode != ModeSentinel {
		t.Errorf("old layout: %+v, %v", l3, err)
	}
	os.WriteFile(filepath.Join(dir, LayoutFile), []byte(`{"mode":"ring","host":"127.0.0.1","shards":[{"name":"shard-1","ports":[1]}]}`), 0o644)
	if _, err := LoadLayout(dir); err == nil {
		t.Error("unknown mode accepted")
	}

	conf := l.clusterNodeConf(dir, 7004)
	for _, want := range []string{"port 7004\n", "appendonly yes\n", "cluster-enabled yes\n", "cluster-config-file nodes.conf\n",
		"cluster-node-timeout 5000\n", "repl-diskless-sync-delay 0\n", `dir "` + NodeDir(dir, 7004) + `"`} {
		if !strings.Contains(conf, want) {
			t.Errorf("node.conf lacks %q:\n%s", want, conf)
		}
	}
	if strings.Contains(conf, "replicaof") {
		t.Error("a cluster node's conf has replicaof")
	}
}

func TestNodesConfRole(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	replica := write("r.conf", "aaaa 127.0.0.1:7000@17000 master - 0 1 1 connected 0-5460\n"+
		"bbbb 127.0.0.1:7003@17003 myself,slave aaaa 0 0 1 connected\nvars currentEpoch 3 lastVoteEpoch 0\n")
	master := write("m.conf", "aaaa 127.0.0.1:7000@17000 myself,master - 0 1 1 connected 0-5460\nvars currentEpoch 3\n")
	for path, want := range map[string]string{replica: "replica", master: "master", write("e.conf", "vars currentEpoch 0\n"): "",
		filepath.Join(dir, "missing"): ""} {
		if got := nodesConfRole(path); got != want {
			t.Errorf("nodesConfRole(%s) = %q, want %q", filepath.Base(path), got, want)
		}
	}
}

// A CLUSTER NODES reply in Redis 7.0's format: hostname after the bus
// port, an open slot in brackets, a failed master.
const nodesText = "07c3 127.0.0.1:30004@40004 slave e7d1 0 1426238317239 4 connected\n" +
	"6733 127.0.0.1:30002@40002,host-b master - 0 1426238316232 2 connected 5461-10922 [5461->-e7d1]\n" +
	"e7d1 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-5460 11000\n" +
	"292f :0@0 master,fail,noaddr - 1426238318243 1426238318243 3 disconnected\n"

func TestParseClusterNodes(t *testing.T) {
	nodes := parseClusterNodes(nodesText + "garbage line\n")
	if len(nodes) != 4 {
		t.Fatalf("%d nodes", len(nodes))
	}
	me := myself(nodes)
	if me == nil || me.id != "e7d1" || me.addr != "127.0.0.1:30001" || me.replica() || me.slotCount != 5462 || me.epoch != 1 {
		t.Errorf("myself = %+v", me)
	}
	if n := nodes[1]; n.addr != "127.0.0.1:30002" || n.slotCount != 5462 || len(n.ranges) != 1 || n.link != "connected" {
		t.Errorf("node with hostname and open slot = %+v", n)
	}
	if n := nodes[0]; !n.replica() || n.master != "e7d1" || n.slotCount != 0 {
		t.Errorf("replica = %+v", n)
	}
	// The signature ignores line order and who is "myself".
	other := strings.ReplaceAll(nodesText, "myself,master", "master")
	lines := strings.Split(strings.TrimSpace(other), "\n")
	lines[0], lines[2] = lines[2], lines[0]
	if a, b := slotSignature(nodes), slotSignature(parseClusterNodes(strings.Join(lines, "\n"))); a != b || a != "6733=5461-10922 e7d1=0-5460,11000" {
		t.Errorf("signatures %q, %q", a, b)
	}
	// The topology signature also sees who follows whom.
	promoted := strings.Replace(nodesText, "07c3 127.0.0.1:30004@40004 slave e7d1", "07c3 127.0.0.1:30004@40004 master -", 1)
	if slotSignature(parseClusterNodes(promoted)) != slotSignature(nodes) ||
		topologySignature(parseClusterNodes(promoted)) == topologySignature(nodes) {
		t.Error("topologySignature misses a replica's master")
	}
}

func TestCreateFirstSlot(t *testing.T) {
	// redis-cli --cluster create's ranges (admin.PlanCreate computes the same).
	for n, want := range map[int][]int{3: {0, 5461, 10923}, 4: {0, 4096, 8192, 12288}, 5: {0, 3277, 6554, 9830, 13107}} {
		for i, w := range want {
			if got := createFirstSlot(i, n); got != w {
				t.Errorf("createFirstSlot(%d, %d) = %d, want %d", i, n, got, w)
			}
		}
	}
}

func TestFailoverBetween(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	before := parseClusterNodes("a 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460\n" +
		"b 127.0.0.1:7001@17001 master - 0 0 2 connected 5461-16383\n" +
		"c 127.0.0.1:7003@17003 slave a 0 0 1 connected\n")
	if f := failoverBetween(nil, before, at); f != nil {
		t.Errorf("first view: %+v", f)
	}
	if f := failoverBetween(before, before, at); f != nil {
		t.Errorf("no change: %+v", f)
	}
	// c took over a's slots; a is failed.
	after := parseClusterNodes("a 127.0.0.1:7000@17000 master,fail - 0 0 1 disconnected\n" +
		"b 127.0.0.1:7001@17001 myself,master - 0 0 2 connected 5461-16383\n" +
		"c 127.0.0.1:7003@17003 master - 0 0 4 connected 0-5460\n")
	f := failoverBetween(before, after, at)
	if f == nil || f.From != "127.0.0.1:7000" || f.To != "127.0.0.1:7003" || f.Ranges != "0-5460" || f.Epoch != 4 || !f.Time.Equal(at) {
		t.Errorf("failover = %+v", f)
	}
	// A reshard between healthy masters is not a failover.
	resharded := parseClusterNodes("a 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 100-5460\n" +
		"b 127.0.0.1:7001@17001 master - 0 0 5 connected 0-99 5461-16383\n" +
		"c 127.0.0.1:7003@17003 slave a 0 0 1 connected\n")
	if f := failoverBetween(before, resharded, at); f != nil {
		t.Errorf("reshard reported as failover: %+v", f)
	}
}

func TestWriteClusterTable(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := &ClusterStatus{Mode: ModeCluster, Time: now, Entry: "127.0.0.1:7000", State: "ok", KnownNodes: 6, Agree: 5, Asked: 6,
		Unreachable: []string{"127.0.0.1:7005"},
		Masters: []ClusterMasterStatus{
			{ID: "07c37dfeb235213a872192d90877d0cd55635b91", Addr: "127.0.0.1:7000", ConfigEpoch: 1, State: "ok", Flags: "master",
				Slots: 5461, Ranges: "0-5460", Replicas: []ClusterReplicaStatus{
					{ID: "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca", Addr: "127.0.0.1:7003", Link: "up", LagBytes: 1536, LagSeconds: 1}}},
			{ID: "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1", Addr: "127.0.0.1:7004", ConfigEpoch: 7, State: "ok", Flags: "master",
				Slots: 5462, Ranges: "5461-10922", Replicas: []ClusterReplicaStatus{
					{ID: "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f", Addr: "127.0.0.1:7001", Link: "unreachable", LagSeconds: -1}}},
			{ID: "824fe116063bc5fcf9f4ffd895bc17aee7731ac3", Addr: "127.0.0.1:7002", ConfigEpoch: 3, State: "unreachable", Flags: "master,fail",
				Slots: 5461, Ranges: "10923-16380,16381,16382,16383,10000,10001,10002,10003"},
		},
		LastFailover: &ClusterFailover{Time: now.Add(-12 * time.Second), Ranges: "5461-10922", From: "127.0.0.1:7001", To: "127.0.0.1:7004", Epoch: 7},
	}
	var b strings.Builder
	if err := WriteClusterTable(&b, st); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, line := range strings.Split(out, "\n") {
		if len(line) >= 80 {
			t.Errorf("line of %d columns: %q", len(line), line)
		}
	}
	for _, want := range []string{
		"shardis cluster: 3 masters, 6 nodes, cluster_state ok, 5/6 agree  03:04:05\n",
		"unreachable: 127.0.0.1:7005\n",
		"127.0.0.1:7000        07c37dfe  1     ok          5461 0-5460\n",
		"  127.0.0.1:7003      e7d1eecc        up lag 1.5K 1s\n",
		"  127.0.0.1:7001      292f8b36        unreachable\n",
		"127.0.0.1:7002        824fe116  3     fail        5461 10923-16380,16381,16382~\n",
		"  (no replica)\n",
		"last failover: 12s ago (03:03:53) 127.0.0.1:7001 -> 127.0.0.1:7004, epoch 7\n  slots 5461-10922\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
