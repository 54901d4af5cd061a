package node

import (
	"strconv"
	"testing"

	"github.com/shardis/shardis/internal/testutil"
)

// CONFIG SET cluster-link-sendbuf-limit reaches the running bus, as in
// Redis (24-links.tcl lowers it on a live node and expects a link to be
// closed).
func TestClusterConfigSetSendBufLimit(t *testing.T) {
	ts := startServer(t, "port", strconv.Itoa(testutil.FreePort(t)), "cluster-port", strconv.Itoa(testutil.FreePort(t)),
		"cluster-enabled", "yes", "cluster-config-file", "nodes.conf")
	if ts.srv.cluster == nil {
		t.Fatal("cluster mode not started")
	}
	c := ts.client(t)
	if got := ts.srv.cluster.Runner().SendBufLimit(); got != 0 {
		t.Fatalf("limit at start %d, want 0", got)
	}
	if err := c.ConfigSet(ctx(t), "cluster-link-sendbuf-limit", "256kb").Err(); err != nil {
		t.Fatal(err)
	}
	if got := ts.srv.cluster.Runner().SendBufLimit(); got != 256*1024 {
		t.Fatalf("limit after CONFIG SET %d, want %d", got, 256*1024)
	}
}
