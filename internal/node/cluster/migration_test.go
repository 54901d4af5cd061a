package cluster

import (
	"testing"
	"time"
)

func TestReplicaMigration(t *testing.T) {
	// Master 0 has replicas 3 and 4, master 1 replica 5, master 2 replica
	// 6. Replica 6 dies: master 2 is orphaned. The replica of master 0
	// with the smaller id moves to master 2, once master 2 has been
	// orphaned for 5 s; with migration off or a barrier of 2, nobody moves.
	cases := []struct {
		name    string
		tweak   func(c *Config)
		migrate bool
	}{
		{"allowed", func(c *Config) {}, true},
		{"not-allowed", func(c *Config) { c.AllowReplicaMigration = false }, false},
		{"barrier-2", func(c *Config) { c.MigrationBarrier = 2 }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := replicaCluster(t, 7, 3, map[int]int{3: 0, 4: 0, 5: 1, 6: 2}, func(i int, c *Config) { tc.tweak(c) })
			w.run(3 * time.Second)
			r3, r4 := w.nodes[3], w.nodes[4]
			mover, stayer := r3, r4
			if r4.m.MyID() < r3.m.MyID() {
				mover, stayer = r4, r3
			}
			target := w.nodes[2].m.MyID()
			w.crash(6)
			w.until(10*time.Second, "replica 6 FAIL", func() bool { return flagsOf(mover, w.nodes[6].m.MyID())&FlagFail != 0 })
			if !tc.migrate {
				w.run(10 * time.Second)
				for _, sn := range []*simNode{r3, r4} {
					if sn.m.Myself().Master != w.nodes[0].m.MyID() || len(sn.eventsOf(EventReplicaMigration)) != 0 {
						t.Fatalf("node %d migrated", sn.idx)
					}
				}
				return
			}
			took := w.until(10*time.Second, "migration", func() bool { return mover.m.Myself().Master == target })
			if took <= migrationDelay || took > migrationDelay+2*cronPeriod {
				t.Fatalf("migrated %v after FAIL, want just over 5 s", took)
			}
			if e := mover.eventsOf(EventReplicaMigration); len(e) != 1 || e[0].Node != target {
				t.Fatalf("migration events %+v", e)
			}
			if r := mover.roles; r[len(r)-1].Master != target {
				t.Fatalf("role changes %+v", r)
			}
			w.run(3 * time.Second)
			if stayer.m.Myself().Master != w.nodes[0].m.MyID() {
				t.Fatal("both replicas moved")
			}
			w.until(5*time.Second, "everyone sees the move", func() bool {
				for _, sn := range w.nodes {
					if sn.down {
						continue
					}
					if ni, _ := sn.m.Node(mover.m.MyID()); ni.Master != target {
						return false
					}
				}
				return true
			})
		})
	}
}
