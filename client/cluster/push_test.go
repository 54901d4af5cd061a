package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/testutil"
)

// TestPushTriggersRefresh: with a ChannelWatcher, a message on the
// reserved channel makes the client refresh at once.
func TestPushTriggersRefresh(t *testing.T) {
	nodes := startCluster(t, 3, 0)
	var mu sync.Mutex
	var reasons []string
	c := newClient(t, nodes, Options{Watcher: ChannelWatcher{}, WatchNodes: 1, RefreshInterval: -1,
		MinRefreshInterval: 50 * time.Millisecond, OnRefresh: func(ev RefreshEvent) {
			mu.Lock()
			reasons = append(reasons, ev.Reason)
			mu.Unlock()
		}})
	ctx := context.Background()
	testutil.WaitFor(t, 10*time.Second, "the watcher's subscription", func() bool {
		for _, n := range nodes {
			if m, _ := n.Client().PubSubNumSub(ctx, ReservedChannel).Result(); m[ReservedChannel] > 0 {
				return true
			}
		}
		return false
	})
	before := c.Stats().Refreshes
	if err := nodes[0].Client().Publish(ctx, ReservedChannel, "1 slots draft").Err(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "a pushed refresh", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return c.Stats().Refreshes > before && reasons[len(reasons)-1] == "push"
	})
}
