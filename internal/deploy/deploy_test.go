package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNewLayout(t *testing.T) {
	l, err := NewLayout(Plan{Shards: 3, Replicas: 1, Sentinels: 3, BasePort: 7000, SentinelPort: 26379,
		SentinelKind: SentinelOurs, DownAfter: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l.MasterNames(), ","); got != "shard-1,shard-2,shard-3" {
		t.Errorf("names = %s", got)
	}
	if l.Shards[2].Ports[0] != 7004 || l.Shards[2].Ports[1] != 7005 || l.Quorum != 2 || l.FailoverTimeoutMs != 15000 {
		t.Errorf("layout = %+v", l)
	}
	if got := strings.Join(l.SentinelAddrs(), ","); got != "127.0.0.1:26379,127.0.0.1:26380,127.0.0.1:26381" {
		t.Errorf("sentinels = %s", got)
	}
	for _, bad := range []Plan{
		{Shards: 0, Sentinels: 1, SentinelKind: SentinelOurs, DownAfter: time.Second},
		{Shards: 1, Sentinels: 0, SentinelKind: SentinelOurs, DownAfter: time.Second},
		{Shards: 1, Sentinels: 3, Quorum: 4, SentinelKind: SentinelOurs, DownAfter: time.Second, BasePort: 1, SentinelPort: 2},
		{Shards: 1, Sentinels: 1, SentinelKind: "other", DownAfter: time.Second},
		{Shards: 1, Replicas: 1, Sentinels: 1, SentinelKind: SentinelRedis, DownAfter: time.Second, BasePort: 65535, SentinelPort: 100},
	} {
		if _, err := NewLayout(bad); err == nil {
			t.Errorf("NewLayout(%+v) accepted", bad)
		}
	}
}

func TestLayoutSaveLoadAndCurrentMasters(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadLayout(dir); !os.IsNotExist(unwrapAll(err)) {
		t.Fatalf("LoadLayout on an empty dir: %v", err)
	}
	l, err := NewLayout(Plan{Shards: 2, Replicas: 2, Sentinels: 2, BasePort: 9000, SentinelPort: 9100,
		SentinelKind: SentinelRedis, DownAfter: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Save(dir); err != nil {
		t.Fatal(err)
	}
	l2, err := LoadLayout(dir)
	if err != nil || l2.Shards[1].Ports[2] != 9005 || l2.SentinelKind != SentinelRedis {
		t.Fatalf("reloaded %+v, %v", l2, err)
	}
	// No Sentinel files: the first ports.
	if m := l.CurrentMasters(dir); m["shard-1"] != 9000 || m["shard-2"] != 9003 {
		t.Errorf("masters = %v", m)
	}
	// One Sentinel saw shard-2 fail over to 9005 (epoch 2), the other is
	// behind (epoch 1, 9004); an address outside the shard is ignored.
	write := func(port int, text string) {
		d := SentinelDir(dir, port)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "sentinel.conf"), []byte(text), 0o644)
	}
	write(9100, "sentinel monitor shard-2 127.0.0.1 9004 2\nsentinel config-epoch shard-2 1\nsentinel monitor shard-1 127.0.0.1 7777 2\n")
	write(9101, "port 9101\nsentinel monitor shard-2 127.0.0.1 9005 2\nsentinel config-epoch shard-2 2\nsentinel known-replica shard-2 127.0.0.1 9003\n")
	if m := l.CurrentMasters(dir); m["shard-1"] != 9000 || m["shard-2"] != 9005 {
		t.Errorf("masters = %v", m)
	}
	conf := l.nodeConf(dir, 9003, 9005)
	for _, want := range []string{"port 9003\n", "appendonly yes\n", "replicaof 127.0.0.1 9005\n"} {
		if !strings.Contains(conf, want) {
			t.Errorf("node.conf lacks %q:\n%s", want, conf)
		}
	}
	if strings.Contains(l.nodeConf(dir, 9005, 9005), "replicaof") {
		t.Error("master's node.conf has replicaof")
	}
	sc := l.sentinelConf(dir, 9100)
	for _, want := range []string{"port 9100\n", "sentinel monitor shard-1 127.0.0.1 9000 2\n", "sentinel down-after-milliseconds shard-2 1000\n"} {
		if !strings.Contains(sc, want) {
			t.Errorf("sentinel.conf lacks %q:\n%s", want, sc)
		}
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

func TestWriteTable(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := &Status{Time: now, Sentinel: "127.0.0.1:26379", Sentinels: []string{"a", "b", "c"}, Shards: []ShardStatus{
		{Name: "shard-1", Master: "127.0.0.1:7000", State: "ok", Role: "master", Agree: 3, SentinelsAsked: 3,
			Replicas: []ReplicaStatus{{Addr: "127.0.0.1:7001", Link: "up", LagBytes: 1536, LagSeconds: 10},
				{Addr: "127.0.0.1:7006", Link: "sync", LagBytes: 5 << 20, LagSeconds: 0}}},
		{Name: "shard-2", Master: "127.0.0.1:7003", State: "ok", Role: "master", Agree: 2, SentinelsAsked: 3, ConfigEpoch: 4,
			Replicas:     []ReplicaStatus{{Addr: "127.0.0.1:7002", Link: "down", LagSeconds: -1}},
			LastFailover: &Failover{Time: now.Add(-12 * time.Second), Epoch: 4}},
		{Name: "shard-3", Master: "a-very-long-hostname.example.com:7004", State: "odown", Role: "unreachable",
			Agree: 3, SentinelsAsked: 3, LastFailover: &Failover{Epoch: 12}},
	}}
	var b strings.Builder
	if err := WriteTable(&b, st); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, line := range strings.Split(out, "\n") {
		if len(line) >= 80 {
			t.Errorf("line of %d columns: %q", len(line), line)
		}
	}
	for _, want := range []string{
		"shard-1  127.0.0.1:7000      ok       127.0.0.1:7001 up 1.5K 10s 3/3   -\n",
		"                                      127.0.0.1:7006 sync 5.0M 0s\n",
		"shard-2  127.0.0.1:7003      ok       127.0.0.1:7002 down        2/3   12s ago\n",
		"shard-3  a-very-long-hostna~ odown    (none)                     3/3   epoch 12\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestHumanBytesAndOrder(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 1023: "1023B", 1024: "1.0K", 20 << 10: "20K", 3 << 20: "3.0M", 300 << 20: "300M", 2 << 30: "2.0G"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %s, want %s", n, got, want)
		}
	}
	if !shardLess("shard-2", "shard-10") || shardLess("shard-10", "shard-2") || !shardLess("a", "b") {
		t.Error("shardLess")
	}
}
