package node

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/shardis/shardis/internal/node/config"
)

func TestConfigGetPatternsAndHidden(t *testing.T) {
	ts := startServer(t, "enable-protected-configs", "yes") // sets dir and dbfilename back below
	rc := ts.client(t)
	got, err := rc.ConfigGet(ctx(t), "*of").Result()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["replicaof"]; !ok {
		t.Fatalf("*of lacks replicaof: %v", got)
	}
	if _, ok := got["slaveof"]; !ok {
		t.Fatalf("*of lacks its alias slaveof: %v", got)
	}
	all, err := rc.ConfigGet(ctx(t), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, hidden := range []string{"key-load-delay", "rdb-key-save-delay", "watchdog-period", "metrics-addr"} {
		if _, ok := all[hidden]; ok {
			t.Fatalf("hidden %s in CONFIG GET *", hidden)
		}
		one, err := rc.ConfigGet(ctx(t), hidden).Result()
		if _, ok := one[hidden]; err != nil || !ok {
			t.Fatalf("CONFIG GET %s: %v %v", hidden, one, err)
		}
	}
	// Every name CONFIG GET * shows takes its own value back, except the
	// immutable ones.
	for k, v := range all {
		if d, ok := config.Lookup(k); ok && d.Immutable() {
			continue
		}
		if k == "replicaof" || k == "slaveof" {
			continue
		}
		if err := rc.ConfigSet(ctx(t), k, v).Err(); err != nil {
			t.Fatalf("CONFIG SET %s %q: %v", k, v, err)
		}
	}
	// Aliases asked for by name are shown under that name.
	if got, err := rc.ConfigGet(ctx(t), "slave-read-only").Result(); err != nil || got["slave-read-only"] != "yes" || len(got) != 1 {
		t.Fatalf("alias by name: %v %v", got, err)
	}
}

func TestConfigSetRollback(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	if err := rc.ConfigSet(ctx(t), "maxmemory", "10000002").Err(); err != nil {
		t.Fatal(err)
	}
	err := rc.Do(ctx(t), "CONFIG", "SET", "maxmemory", "10000001", "maxmemory-clients", "200%", "client-query-buffer-limit", "invalid").Err()
	if err == nil || err.Error() != "ERR CONFIG SET failed (possibly related to argument 'maxmemory-clients') - percentage argument must be less or equal to 100" {
		t.Fatalf("bad percentage: %v", err)
	}
	if v := rc.ConfigGet(ctx(t), "maxmemory").Val()["maxmemory"]; v != "10000002" {
		t.Fatalf("maxmemory not rolled back: %q", v)
	}
	if err := rc.ConfigSet(ctx(t), "maxmemory-clients", "10%").Err(); err != nil {
		t.Fatal(err)
	}
	if v := rc.ConfigGet(ctx(t), "maxmemory-clients").Val()["maxmemory-clients"]; v != "10%" {
		t.Fatalf("maxmemory-clients %q", v)
	}

	// A port that is taken: Redis's error, every value of the call restored.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)
	err = rc.Do(ctx(t), "CONFIG", "SET", "maxmemory", "10000001", "port", busyPort, "client-query-buffer-limit", "10mb").Err()
	if err == nil || !strings.HasPrefix(err.Error(), "ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port") {
		t.Fatalf("busy port: %v", err)
	}
	cur := rc.ConfigGet(ctx(t), "*").Val()
	if cur["maxmemory"] != "10000002" || cur["client-query-buffer-limit"] != "1073741824" || cur["port"] != strconv.Itoa(ts.srv.Addr().(*net.TCPAddr).Port) {
		t.Fatalf("not rolled back: maxmemory %s qbuf %s port %s", cur["maxmemory"], cur["client-query-buffer-limit"], cur["port"])
	}
	if err := rc.ConfigSet(ctx(t), "port", cur["port"]).Err(); err != nil {
		t.Fatalf("same port: %v", err)
	}
}

func TestConfigSetPortMoves(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(probe.Addr().(*net.TCPAddr).Port)
	probe.Close()
	if err := rc.ConfigSet(ctx(t), "port", port).Err(); err != nil {
		t.Fatal(err)
	}
	// The established connection stays; new ones go to the new port only.
	if err := rc.Ping(ctx(t)).Err(); err != nil {
		t.Fatal(err)
	}
	moved := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port, DisableIdentity: true, MaxRetries: -1})
	defer moved.Close()
	if err := moved.Ping(ctx(t)).Err(); err != nil {
		t.Fatalf("new port: %v", err)
	}
	if c, err := net.Dial("tcp", ts.addr); err == nil {
		c.Close()
		t.Fatal("old port still accepts connections")
	}
}
