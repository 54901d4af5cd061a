package node

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/testutil"
)

// writeHLLAndGeo writes HyperLogLogs (sparse, promoted to dense, merged, a
// PFCOUNT cache update) and geo sets through c.
func writeHLLAndGeo(t *testing.T, c *redis.Client, prefix string) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < 3000; i++ {
		c.PFAdd(ctx, prefix+"dense", fmt.Sprint("e", i))
	}
	c.PFAdd(ctx, prefix+"sparse", "a", "b", "c")
	c.PFCount(ctx, prefix+"sparse") // stores the cached cardinality
	c.PFMerge(ctx, prefix+"merged", prefix+"dense", prefix+"sparse")
	c.GeoAdd(ctx, prefix+"geo", &redis.GeoLocation{Name: "Palermo", Longitude: 13.361389, Latitude: 38.115556},
		&redis.GeoLocation{Name: "Catania", Longitude: 15.087269, Latitude: 37.502669})
	c.GeoSearchStore(ctx, prefix+"geo", prefix+"near", &redis.GeoSearchStoreQuery{
		GeoSearchQuery: redis.GeoSearchQuery{Longitude: 15, Latitude: 37, Radius: 200, RadiusUnit: "km"}})
	if n, err := c.Exists(ctx, prefix+"dense", prefix+"sparse", prefix+"merged", prefix+"geo", prefix+"near").Result(); err != nil || n != 5 {
		t.Fatalf("written keys: %d %v", n, err)
	}
}

// TestHLLGeoReplicationInteropRedis: HyperLogLogs and geo sets written on
// one server reach a replica of the other kind with the same bytes (GET of
// a HyperLogLog, scores of a geo set), both ways.
func TestHLLGeoReplicationInteropRedis(t *testing.T) {
	testutil.Binary(t, "redis-server")
	c := context.Background()
	t.Run("NodeMasterRedisReplica", func(t *testing.T) {
		node := startServer(t)
		nc := node.client(t)
		_, p := hostPort(node.addr)
		rr := testutil.StartRedis(t, "--replicaof", "127.0.0.1 "+p)
		rc := redis.NewClient(&redis.Options{Addr: rr.Addr, DisableIdentity: true})
		defer rc.Close()
		waitLinkUp(t, rc)
		writeHLLAndGeo(t, nc, "n")
		sameDataset(t, nc, rc)
	})
	t.Run("RedisMasterNodeReplica", func(t *testing.T) {
		rm := testutil.StartRedis(t)
		mc := redis.NewClient(&redis.Options{Addr: rm.Addr, DisableIdentity: true})
		defer mc.Close()
		writeHLLAndGeo(t, mc, "full") // reaches the replica in the RDB
		node := startServer(t)
		nc := node.client(t)
		nc.Do(c, "REPLICAOF", "127.0.0.1", rm.Port)
		waitLinkUp(t, nc)
		writeHLLAndGeo(t, mc, "stream") // and through the command stream
		sameDataset(t, mc, nc)
		// The replica's PFCOUNT agrees with the master's on every HyperLogLog.
		for _, k := range []string{"fulldense", "fullmerged", "streamdense", "streamsparse"} {
			if a, b := mc.PFCount(c, k).Val(), nc.PFCount(c, k).Val(); a != b || a == 0 {
				t.Fatalf("PFCOUNT %s: master %d, replica %d", k, a, b)
			}
		}
	})
}
