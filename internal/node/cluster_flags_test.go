package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/testutil"
)

// TestAskingDoesNotDenyBlocking: ASKING and READONLY are flags of their
// own. They once shared their bits with the AOF loader's deny-blocking
// flag and WAIT's parked flag, so a BLPOP after ASKING returned nil at
// once instead of blocking.
func TestAskingDoesNotDenyBlocking(t *testing.T) {
	n := startShardNode(t, 0, 0, "")
	n.do(t, "cluster", "addslotsrange", "0", "16383")
	waitClusterOK(t, []*clNode{n})

	c := redis.NewClient(&redis.Options{Addr: n.addr, DisableIdentity: true, MaxRetries: -1, PoolSize: 1})
	defer c.Close()
	cx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan []string, 1)
	errs := make(chan error, 1)
	go func() {
		conn := c.Conn()
		defer conn.Close()
		var res *redis.StringSliceCmd
		_, err := conn.Pipelined(cx, func(p redis.Pipeliner) error {
			p.ReadOnly(cx)
			p.Do(cx, "asking")
			res = p.BLPop(cx, 0, "{q}list")
			return nil
		})
		if err != nil {
			errs <- err
			return
		}
		got <- res.Val()
	}()
	testutil.WaitFor(t, 10*time.Second, "the BLPOP after ASKING to block", func() bool {
		select {
		case v := <-got:
			t.Fatalf("BLPOP after ASKING returned %q without blocking", v)
		case err := <-errs:
			t.Fatalf("BLPOP after ASKING: %v", err)
		default:
		}
		info := n.str(t, "info", "clients")
		return strings.Contains(info, "blocked_clients:1\r\n")
	})
	n.do(t, "rpush", "{q}list", "v")
	select {
	case v := <-got:
		if len(v) != 2 || v[1] != "v" {
			t.Fatalf("BLPOP = %q, want [{q}list v]", v)
		}
	case err := <-errs:
		t.Fatalf("BLPOP: %v", err)
	case <-cx.Done():
		t.Fatal("BLPOP was not served by RPUSH")
	}
}
