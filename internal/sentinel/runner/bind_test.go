package runner_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestRunnerListensOnEveryBindAddress checks that a multi-address bind line
// serves every address, as redis-sentinel does (the runner used to listen
// on the first one only), and that an optional "-" address that cannot be
// bound is skipped. The addresses are loopback ones (127.0.0.0/8 is all
// loopback on Linux).
func TestRunnerListensOnEveryBindAddress(t *testing.T) {
	port := freePort(t)
	// 192.0.2.1 (TEST-NET-1) is assigned to no interface here: optional.
	conf := "port " + strconv.Itoa(port) + "\nbind 127.0.0.2 127.0.0.1 -192.0.2.1\n" +
		"sentinel monitor mymaster 127.0.0.1 1 1\n"
	r := startInProcess(t, conf)
	ctx := context.Background()
	addrs := r.Addrs()
	if len(addrs) != 2 {
		t.Fatalf("listeners %v, want 127.0.0.2 and 127.0.0.1", addrs)
	}
	for _, host := range []string{"127.0.0.2", "127.0.0.1"} {
		c := redis.NewClient(&redis.Options{Addr: net.JoinHostPort(host, strconv.Itoa(port)), MaxRetries: -1})
		pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
		pong, err := c.Ping(pctx).Result()
		pcancel()
		c.Close()
		if err != nil || pong != "PONG" {
			t.Fatalf("PING on %s: %q %v", host, pong, err)
		}
	}
}

// TestRunnerBindFailure checks that a required address that cannot be
// bound makes Run fail with the address in the error, as redis-sentinel
// refuses to start.
func TestRunnerBindFailure(t *testing.T) {
	conf := "port " + strconv.Itoa(freePort(t)) + "\nbind 127.0.0.1 192.0.2.1\nsentinel monitor mymaster 127.0.0.1 1 1\n"
	r := newInProcess(t, conf)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.Run(ctx); err == nil || !strings.Contains(err.Error(), "192.0.2.1") {
		t.Fatalf("Run with an unbindable address: %v", err)
	}
}
