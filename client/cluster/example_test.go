package cluster_test

import (
	"context"
	"fmt"

	"github.com/shardis/shardis/client/cluster"
)

func Example() {
	ctx := context.Background()
	c, err := cluster.New(ctx, &cluster.Options{Addrs: []string{"127.0.0.1:7000"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	// Keys on different slots: split per slot, replies reassembled.
	_ = c.MSet(ctx, "user:1", "ann", "user:2", "bob").Err()
	vals, _ := c.MGet(ctx, "user:1", "user:2").Result()
	fmt.Println(vals)
}
