package cluster

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
)

type nopRedisLogger struct{}

func (nopRedisLogger) Printf(context.Context, string, ...interface{}) {}

func TestMain(m *testing.M) {
	// go-redis logs every failed dial; the failover test causes many.
	if os.Getenv("CLUSTER_DEBUG") == "" {
		redis.SetLogger(nopRedisLogger{})
	}
	os.Exit(m.Run())
}
