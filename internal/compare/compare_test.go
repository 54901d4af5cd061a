package compare

import (
	"slices"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/consistent"
)

// The end-to-end runs are in cmd/shardnode (TestCompareEndToEnd,
// TestComparePreShardingGrow); these are the pure helpers.

func TestLongestGap(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name     string
		ts       []time.Duration
		from, to time.Duration
		want     time.Duration
	}{
		{"none", nil, 1 * s, 5 * s, 4 * s},
		{"from the start", []time.Duration{3 * s, 4 * s}, 1 * s, 5 * s, 2 * s},
		{"in the middle", []time.Duration{1 * s, 2 * s, 4500 * time.Millisecond, 5 * s}, 1 * s, 5 * s, 2500 * time.Millisecond},
		{"to the end", []time.Duration{1 * s, 2 * s}, 1 * s, 5 * s, 3 * s},
		{"unsorted, before from ignored", []time.Duration{4 * s, 0, 2 * s}, 1 * s, 4 * s, 2 * s},
	} {
		if got := longestGap(tc.ts, tc.from, tc.to); got != tc.want {
			t.Errorf("%s: longestGap = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestReplicaAddrs(t *testing.T) {
	info := "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n" +
		"slave0:ip=127.0.0.1,port=7001,state=online,offset=42,lag=0\r\n" +
		"slave1:ip=127.0.0.1,port=7005,state=online,offset=42,lag=1\r\n" +
		"master_failover_state:no-failover\r\nslave_read_only:1\r\n"
	got := replicaAddrs(info)
	if want := []string{"127.0.0.1:7001", "127.0.0.1:7005"}; !slices.Equal(got, want) {
		t.Errorf("replicaAddrs = %v, want %v", got, want)
	}
	if v := infoField(info, "connected_slaves"); v != "2" {
		t.Errorf("infoField(connected_slaves) = %q", v)
	}
}

func TestKeysHashAlike(t *testing.T) {
	// Every key of a tag must be on one slot (and, with KeyTags, one
	// shard), or multikey_tagged would not measure single-node commands.
	a, b := taggedKey(7, 0), taggedKey(7, 9)
	if a == b || consistent.KeySlot(a) != consistent.KeySlot(b) {
		t.Errorf("%s and %s: slots %d and %d", a, b, consistent.KeySlot(a), consistent.KeySlot(b))
	}
}

func TestDefaults(t *testing.T) {
	opt, err := (&Options{}).defaulted()
	if err != nil {
		t.Fatal(err)
	}
	if opt.Masters != 3 || opt.Replicas != 1 || opt.Duration != 20*time.Second || opt.DownAfter != 2*time.Second ||
		!slices.Equal(opt.Topologies, []string{PreSharding, Cluster}) || opt.GrowTimeout != time.Minute {
		t.Errorf("defaults: %+v", opt)
	}
	if _, err := (&Options{Masters: 2}).defaulted(); err == nil {
		t.Error("2 masters accepted")
	}
	ext, err := (&Options{ClusterAddr: "127.0.0.1:7000"}).defaulted()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ext.Topologies, []string{Cluster}) || ext.runs(PhaseFailover) || !ext.runs(PhaseWorkloads) {
		t.Errorf("external cluster: topologies %v, failover %v", ext.Topologies, ext.runs(PhaseFailover))
	}
	ext.Disruptive = true
	if !ext.runs(PhaseFailover) {
		t.Error("--disruptive does not run the kill")
	}
}
