package cluster

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/client/cluster/clustertest"
)

type nopRedisLogger struct{}

func (nopRedisLogger) Printf(context.Context, string, ...interface{}) {}

func TestMain(m *testing.M) {
	// go-redis logs every failed dial; the failover test causes many.
	if os.Getenv("CLUSTER_DEBUG") == "" {
		redis.SetLogger(nopRedisLogger{})
	}
	code := m.Run()
	clustertest.RemoveBuilt()
	os.Exit(code)
}
