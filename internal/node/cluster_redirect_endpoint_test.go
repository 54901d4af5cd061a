package node

import (
	"log/slog"
	"testing"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/cluster/redirect"
	"github.com/shardis/shardis/internal/node/clusternode"
)

// The endpoint of MOVED/ASK follows cluster-preferred-endpoint-type as
// Redis's getPreferredEndpoint: ip, hostname or "?", and "" for
// unknown-endpoint (27-endpoints.tcl: "MOVED * :*").
func TestRedirectPreferredEndpoint(t *testing.T) {
	cfg := NewConfig()
	srv := &Server{cfg: cfg, log: slog.Default()}
	var cm clusternode.Mode
	cm.Init(clusterHost{srv}, migHost{srv}, srv.log)
	defer cm.Close()
	rt := &cluster.Routing{Nodes: []cluster.RouteNode{
		{ID: "a", IP: "127.0.0.1", Port: 30001, Hostname: "them.com"},
		{ID: "b", IP: "127.0.0.2", Port: 30002},
	}}
	cases := []struct {
		typ  string
		to   int32
		want string
	}{
		{"ip", 0, "MOVED 12182 127.0.0.1:30001"},
		{"hostname", 0, "MOVED 12182 them.com:30001"},
		{"hostname", 1, "MOVED 12182 ?:30002"},
		{"unknown-endpoint", 0, "MOVED 12182 :30001"},
		{"unknown-endpoint", 1, "MOVED 12182 :30002"},
	}
	for _, tc := range cases {
		if err := cfg.Set("cluster-preferred-endpoint-type", tc.typ); err != nil {
			t.Fatal(err)
		}
		if got := cm.Reply(redirect.Moved, "", 12182, rt, tc.to); got != tc.want {
			t.Errorf("%s node %d: %q, want %q", tc.typ, tc.to, got, tc.want)
		}
	}
}
