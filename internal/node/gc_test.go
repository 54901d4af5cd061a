package node

import (
	"context"
	"testing"
)

func TestGCMinHeadroomConfig(t *testing.T) {
	ts := startServer(t)
	c := ts.client(t)
	ctx := context.Background()
	if got := c.ConfigGet(ctx, "gc-min-headroom").Val()["gc-min-headroom"]; got != "16777216" {
		t.Fatalf("default gc-min-headroom = %q", got)
	}
	if err := c.ConfigSet(ctx, "gc-min-headroom", "64mb").Err(); err != nil {
		t.Fatal(err)
	}
	if got := c.ConfigGet(ctx, "gc-min-headroom").Val()["gc-min-headroom"]; got != "67108864" {
		t.Fatalf("gc-min-headroom after CONFIG SET 64mb = %q", got)
	}
	if err := c.ConfigSet(ctx, "gc-min-headroom", "lots").Err(); err == nil {
		t.Fatal("CONFIG SET gc-min-headroom lots accepted")
	}
}
