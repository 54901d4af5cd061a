package node

import (
	"log/slog"
	"testing"

	"github.com/shardis/shardis/internal/node/repl"
)

// The offset a replica announces on the bus is 0 while it receives and
// loads a full sync, as Redis's replicationGetSlaveOffset after
// +FULLRESYNC dropped the cached master (22-replica-in-sync.tcl "Replica
// in loading state is hidden"), and its offset otherwise, also while its
// link is down (Redis keeps the cached master's offset).
func TestClusterOffsetHidesLoadingReplica(t *testing.T) {
	r := testReplication(1234)
	if got := r.clusterOffset(); got != 1234 {
		t.Fatalf("master: %d, want 1234", got)
	}
	l := &masterLink{r: r, Link: repl.NewLink(nil, slog.Default(), "", 0, nil)}
	r.link = l
	for _, tc := range []struct {
		state string
		want  int64
	}{
		{linkConnect, 1234},
		{linkTransfer, 0},
		{linkConnected, 1234},
	} {
		l.setState(tc.state)
		if got := r.clusterOffset(); got != tc.want {
			t.Errorf("replica link %s: %d, want %d", tc.state, got, tc.want)
		}
	}
}
