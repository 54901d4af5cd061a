package cluster

import (
	"testing"
	"time"
)

func TestFailNeedsMajorityOfMasters(t *testing.T) {
	// 5 masters (quorum 3). Node 4 is cut from nodes 0 and 1 only: they
	// flag it PFAIL and report it, but 2 reports are no majority, so
	// nobody flags FAIL. Cut from node 2 as well, the third report makes
	// it FAIL everywhere.
	w := newCluster(t, 5, 5, nil)
	w.run(3 * time.Second)
	id := w.nodes[4].m.MyID()
	w.cutLink(4, 0)
	w.cutLink(4, 1)
	w.until(5*time.Second, "PFAIL on 0 and 1", func() bool {
		return flagsOf(w.nodes[0], id)&FlagPFail != 0 && flagsOf(w.nodes[1], id)&FlagPFail != 0
	})
	w.until(5*time.Second, "node 0 holds node 1's report", func() bool {
		n, _ := w.nodes[0].m.CountFailureReports(w.now, id)
		return n == 1
	})
	w.run(3 * 2 * time.Second)
	for _, sn := range w.nodes[:4] {
		if flagsOf(sn, id)&FlagFail != 0 {
			t.Fatalf("node %d flagged FAIL with 2 of 5 masters reporting", sn.idx)
		}
	}
	if f := flagsOf(w.nodes[2], id); f&(FlagPFail|FlagFail) != 0 {
		t.Fatalf("node 2 flags %s", FlagsString(f))
	}
	w.cutLink(4, 2)
	took := w.until(3*2*time.Second, "FAIL everywhere", func() bool {
		for _, sn := range w.nodes[:4] {
			if flagsOf(sn, id)&FlagFail == 0 {
				return false
			}
		}
		return true
	})
	// Node 2 needs the node timeout to flag PFAIL itself; the reports
	// then meet within the next pings.
	if took < time.Second || took > 2*time.Second+time.Second+cronPeriod {
		t.Fatalf("FAIL %v after the third master lost node 4", took)
	}
}
