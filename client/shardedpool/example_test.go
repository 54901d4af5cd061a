package shardedpool_test

import (
	"context"
	"fmt"
	"time"

	"github.com/shardis/shardis/client/shardedpool"
)

// A pool over three Sentinel-monitored shards. The order of MasterNames is
// the ring order and must match every other client of the deployment.
func ExampleNew() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pool, err := shardedpool.New(ctx, &shardedpool.Options{
		MasterNames:   []string{"shard0", "shard1", "shard2"},
		SentinelAddrs: []string{"127.0.0.1:26379", "127.0.0.1:26380", "127.0.0.1:26381"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()

	pool.Set(ctx, "user:1000", "alice", 0)                       // routed to the shard of user:1000
	vals, _ := pool.MGet(ctx, "user:1000", "user:1001").Result() // split per shard, merged in order
	fmt.Println(pool.ShardFor("user:1000"), vals)
}

// Without Sentinel: a static list of shards.
func ExampleNew_static() {
	pool, err := shardedpool.New(context.Background(), &shardedpool.Options{
		Shards: []shardedpool.StaticShard{
			{Name: "a", Addr: "10.0.0.1:6379"},
			{Name: "b", Addr: "10.0.0.2:6379"},
		},
		NamedShards: true, // Jedis named shards: the ring uses "a" and "b"
	})
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	fmt.Println(pool.ShardFor("user:1000") != "")
	// Output: true
}
