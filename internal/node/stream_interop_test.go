package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/testutil"
)

// writeStreams writes streams with everything a stream holds: several
// nodes with tombstones and entries whose fields differ from their node's
// master entry, consumer groups with pending entries, a consumer without
// any, a NOACK group, claimed entries, an empty stream with a group, and
// XSETID's counters.
func writeStreams(t *testing.T, c *redis.Client, prefix string) {
	t.Helper()
	ctx := context.Background()
	s := prefix + "big"
	p := c.Pipeline()
	for i := 1; i <= 250; i++ {
		if i%7 == 0 {
			p.XAdd(ctx, &redis.XAddArgs{Stream: s, ID: fmt.Sprintf("%d-1", i), Values: []any{"other", i, "x", strings.Repeat("y", i%40)}})
		} else {
			p.XAdd(ctx, &redis.XAddArgs{Stream: s, ID: fmt.Sprintf("%d-1", i), Values: []any{"f", i, "g", "v"}})
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	c.XDel(ctx, s, "3-1", "50-1", "101-1")
	c.XGroupCreate(ctx, s, "g1", "0")
	c.XGroupCreate(ctx, s, "g2", "$")
	c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g1", Consumer: "alice", Streams: []string{s, ">"}, Count: 5})
	c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g1", Consumer: "bob", Streams: []string{s, ">"}, Count: 3})
	c.XGroupCreateConsumer(ctx, s, "g1", "idle")
	c.XClaim(ctx, &redis.XClaimArgs{Stream: s, Group: "g1", Consumer: "bob", Messages: []string{"1-1"}})
	c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g2", Consumer: "carol", Streams: []string{s, "0"}, NoAck: true})
	c.XAdd(ctx, &redis.XAddArgs{Stream: s, ID: "300-1", Values: []any{"f", "late"}})
	c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g2", Consumer: "carol", Streams: []string{s, ">"}, NoAck: true})
	c.XGroupCreateMkStream(ctx, prefix+"empty", "g", "$")
	c.XAdd(ctx, &redis.XAddArgs{Stream: prefix + "trimmed", ID: "5-5", Values: []any{"a", "b"}})
	c.XTrimMaxLen(ctx, prefix+"trimmed", 0)
	c.Do(ctx, "XSETID", prefix+"trimmed", "9-9", "ENTRIESADDED", "40", "MAXDELETEDID", "7-0")
	if n := c.Exists(ctx, s, prefix+"empty", prefix+"trimmed").Val(); n != 3 {
		t.Fatalf("written stream keys: %d", n)
	}
}

// streamState renders what a stream holds. full adds the delivery times,
// delivery counts and seen times, which RDB, DUMP and AOF keep; a replica
// rebuilt from the command stream keeps the delivery times and counts but
// sets its own seen times and read counters, so replication compares
// without them.
func streamState(t *testing.T, c *redis.Client, key string, full bool) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	fmt.Fprintf(&b, "type=%s\n", c.Type(ctx, key).Val())
	fmt.Fprintf(&b, "range=%v\n", c.XRange(ctx, key, "-", "+").Val())
	info := c.Do(ctx, "XINFO", "STREAM", key, "FULL", "COUNT", "0").Val()
	m, ok := info.(map[any]any)
	if !ok {
		if l, isList := info.([]any); isList {
			m = map[any]any{}
			for i := 0; i+1 < len(l); i += 2 {
				m[l[i]] = l[i+1]
			}
		} else {
			t.Fatalf("XINFO STREAM FULL %s: %v", key, info)
		}
	}
	for _, f := range []string{"length", "last-generated-id", "max-deleted-entry-id", "entries-added", "recorded-first-entry-id", "radix-tree-keys"} {
		fmt.Fprintf(&b, "%s=%v\n", f, m[f])
	}
	groups, _ := m["groups"].([]any)
	for _, g := range groups {
		gm := toMap(g)
		if full {
			fmt.Fprintf(&b, "group %v last=%v read=%v lag=%v pel=%v\n", gm["name"], gm["last-delivered-id"], gm["entries-read"], gm["lag"], gm["pel-count"])
		} else {
			// A replica's read counter is its own: XCLAIM ... LASTID moves
			// the last delivered ID and leaves it (so does redis-server).
			fmt.Fprintf(&b, "group %v last=%v pel=%v\n", gm["name"], gm["last-delivered-id"], gm["pel-count"])
		}
		for _, p := range gm["pending"].([]any) {
			pl := p.([]any)
			if full {
				fmt.Fprintf(&b, "  nack %v\n", pl)
			} else {
				fmt.Fprintf(&b, "  nack %v %v %v\n", pl[0], pl[1], pl[3])
			}
		}
		for _, cons := range gm["consumers"].([]any) {
			cm := toMap(cons)
			if full {
				fmt.Fprintf(&b, "  consumer %v seen=%v pel=%v %v\n", cm["name"], cm["seen-time"], cm["pel-count"], cm["pending"])
			} else {
				fmt.Fprintf(&b, "  consumer %v pel=%v\n", cm["name"], cm["pel-count"])
			}
		}
	}
	return b.String()
}

func toMap(v any) map[any]any {
	if m, ok := v.(map[any]any); ok {
		return m
	}
	l := v.([]any)
	m := map[any]any{}
	for i := 0; i+1 < len(l); i += 2 {
		m[l[i]] = l[i+1]
	}
	return m
}

// streamKeys lists the stream keys of db 0, sorted.
func streamKeys(t *testing.T, c *redis.Client) []string {
	t.Helper()
	keys, err := c.Keys(context.Background(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range keys {
		if c.Type(context.Background(), k).Val() == "stream" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// sameStreams fails unless a and b hold the same streams.
func sameStreams(t *testing.T, a, b *redis.Client, full bool) {
	t.Helper()
	ka, kb := streamKeys(t, a), streamKeys(t, b)
	if strings.Join(ka, ",") != strings.Join(kb, ",") || len(ka) == 0 {
		t.Fatalf("stream keys %v and %v", ka, kb)
	}
	for _, k := range ka {
		if sa, sb := streamState(t, a, k, full), streamState(t, b, k, full); sa != sb {
			t.Fatalf("stream %s differs:\n%s\nvs\n%s", k, sa, sb)
		}
	}
}

func newRedisClient(p *testutil.Process) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: p.Addr, DisableIdentity: true, Protocol: 2})
}

// TestStreamRDBInteropRedis: streams saved by one server load into the
// other with everything they hold, both ways (RDB_TYPE_STREAM_LISTPACKS_2
// written by both).
func TestStreamRDBInteropRedis(t *testing.T) {
	testutil.Binary(t, "redis-server")
	c := context.Background()
	t.Run("OursIntoRedis", func(t *testing.T) {
		dir := t.TempDir()
		node := startServerIn(t, dir)
		nc := node.client(t, 2)
		writeStreams(t, nc, "n:")
		if err := nc.Save(c).Err(); err != nil {
			t.Fatal(err)
		}
		r := testutil.StartRedis(t, "--dir", dir, "--dbfilename", "dump.rdb")
		rc := newRedisClient(r)
		defer rc.Close()
		sameStreams(t, nc, rc, true)
	})
	t.Run("RedisIntoOurs", func(t *testing.T) {
		r := testutil.StartRedis(t)
		rc := newRedisClient(r)
		defer rc.Close()
		writeStreams(t, rc, "r:")
		if err := rc.Save(c).Err(); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(r.Dir, "dump.rdb"))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "dump.rdb"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		node := startServerIn(t, dir)
		sameStreams(t, rc, node.client(t, 2), true)
	})
}

// TestStreamDumpRestoreInteropRedis: DUMP payloads of streams RESTORE on
// the other server, both ways.
func TestStreamDumpRestoreInteropRedis(t *testing.T) {
	testutil.Binary(t, "redis-server")
	c := context.Background()
	node := startServer(t)
	nc := node.client(t, 2)
	r := testutil.StartRedis(t)
	rc := newRedisClient(r)
	defer rc.Close()
	writeStreams(t, nc, "n:")
	writeStreams(t, rc, "r:")
	move := func(from, to *redis.Client, keys ...string) {
		for _, k := range keys {
			payload, err := from.Dump(c, k).Result()
			if err != nil {
				t.Fatalf("DUMP %s: %v", k, err)
			}
			if err := to.Restore(c, k, 0, payload).Err(); err != nil {
				t.Fatalf("RESTORE %s: %v", k, err)
			}
		}
	}
	move(nc, rc, "n:big", "n:empty", "n:trimmed")
	move(rc, nc, "r:big", "r:empty", "r:trimmed")
	sameStreams(t, nc, rc, true)
}

// TestStreamReplicationInteropRedis: streams and their groups reach a
// replica of the other kind, in the initial RDB and through the command
// stream (XADD with generated IDs, XREADGROUP as XCLAIM and XGROUP SETID,
// approximate trimming made exact), both ways.
func TestStreamReplicationInteropRedis(t *testing.T) {
	testutil.Binary(t, "redis-server")
	c := context.Background()
	check := func(t *testing.T, master, replica *redis.Client) {
		t.Helper()
		testutil.WaitFor(t, 10*time.Second, "replica has the streams", func() bool {
			return len(streamKeys(t, replica)) == len(streamKeys(t, master)) &&
				streamState(t, master, "stream:big", false) == streamState(t, replica, "stream:big", false)
		})
		sameStreams(t, master, replica, false)
	}
	more := func(t *testing.T, m *redis.Client) {
		writeStreams(t, m, "stream:")
		for i := 0; i < 300; i++ {
			m.XAdd(c, &redis.XAddArgs{Stream: "stream:gen", MaxLen: 120, Approx: true, Values: []any{"i", i}})
		}
		m.XGroupCreate(c, "stream:gen", "g", "0")
		m.XReadGroup(c, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"stream:gen", ">"}, Count: 10})
		m.XAutoClaim(c, &redis.XAutoClaimArgs{Stream: "stream:gen", Group: "g", Consumer: "d", Start: "0", Count: 3})
		m.XAck(c, "stream:gen", "g", m.XRange(c, "stream:gen", "-", "+").Val()[4].ID)
	}
	t.Run("NodeMasterRedisReplica", func(t *testing.T) {
		node := startServer(t)
		nc := node.client(t, 2)
		writeStreams(t, nc, "full:")
		_, p := hostPort(node.addr)
		rr := testutil.StartRedis(t, "--replicaof", "127.0.0.1 "+p)
		rc := newRedisClient(rr)
		defer rc.Close()
		waitLinkUp(t, rc)
		more(t, nc)
		check(t, nc, rc)
	})
	t.Run("RedisMasterNodeReplica", func(t *testing.T) {
		rm := testutil.StartRedis(t)
		mc := newRedisClient(rm)
		defer mc.Close()
		writeStreams(t, mc, "full:")
		node := startServer(t)
		nc := node.client(t, 2)
		nc.Do(c, "REPLICAOF", "127.0.0.1", rm.Port)
		waitLinkUp(t, nc)
		more(t, mc)
		check(t, mc, nc)
	})
}
