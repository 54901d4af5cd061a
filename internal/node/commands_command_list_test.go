package node

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/testutil"
)

// commandExtensions are the commands shardnode answers that redis-server
// 7.0.15 does not, each documented: CLIENT SETINFO (Redis 7.2's, sent by
// current clients on connect), CLIENT MAINT_NOTIFICATIONS (Redis 8.2's,
// for the cluster client's topology notices) and the whole-slot migration
// commands.
var commandExtensions = []string{"client|maint_notifications", "client|setinfo", "cluster|migration", "cluster|syncslots"}

// COMMAND LIST and COMMAND COUNT equal redis-server 7.0.15's apart from
// the documented extensions; the difference set is logged.
func TestCommandListVsRedis(t *testing.T) {
	bin := testutil.LookPath(t, "redis-server")
	red := redis.NewClient(&redis.Options{Addr: startRedisServer(t, bin), DisableIdentity: true})
	t.Cleanup(func() { red.Close() })
	node := startServer(t).client(t)
	c := context.Background()
	list := func(rc *redis.Client) []string {
		v, err := rc.Do(c, "COMMAND", "LIST").StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(v)
		return v
	}
	want, got := list(red), list(node)
	var missing, extra []string
	for _, n := range want {
		if !slices.Contains(got, n) {
			missing = append(missing, n)
		}
	}
	for _, n := range got {
		if !slices.Contains(want, n) {
			extra = append(extra, n)
		}
	}
	t.Logf("redis-server: %d names, shardnode: %d; missing %v; extensions %v", len(want), len(got), missing, extra)
	for _, n := range missing {
		t.Errorf("shardnode lacks %s", n)
	}
	for _, n := range extra {
		if !slices.Contains(commandExtensions, n) {
			t.Errorf("shardnode answers %s, which redis-server 7.0.15 does not and which is not a documented extension", n)
		}
	}
	// COMMAND COUNT counts top-level commands.
	wc, _ := red.Do(c, "COMMAND", "COUNT").Int()
	gc, _ := node.Do(c, "COMMAND", "COUNT").Int()
	top := 0
	for _, n := range missing {
		if !strings.Contains(n, "|") {
			top++
		}
	}
	if gc != wc-top {
		t.Errorf("COMMAND COUNT: shardnode %d, redis-server %d with %d top-level commands missing", gc, wc, top)
	}
}
