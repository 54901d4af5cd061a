package cluster

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"
)

// TopologyEvent is one pushed notice that the cluster configuration
// changed. Only its arrival matters today: the client reacts by
// refreshing its slot map at once (subject to MinRefreshInterval). The
// fields are a draft of what shardnode will send; see the package doc.
type TopologyEvent struct {
	// Node is the address of the node that announced the change.
	Node string
	// Epoch is the configuration epoch of the change, -1 when unknown.
	Epoch int64
	// Payload is the raw notice, for logs.
	Payload string
}

// TopologyWatcher listens for pushed topology changes on one node. The
// client runs Watch on up to Options.WatchNodes masters, each in its own
// goroutine, and restarts it (on another master) when it returns before
// ctx is done.
type TopologyWatcher interface {
	// Watch blocks until ctx is done or the node's stream of events
	// breaks, calling notify for every event announced by node (the
	// go-redis client of the node at addr).
	Watch(ctx context.Context, addr string, node *redis.Client, notify func(TopologyEvent)) error
}

// ReservedChannel is the draft name of the node-local channel on which
// shardnode will announce cluster configuration changes to its own
// clients. It is not a cluster-wide PUBLISH: each node tells only the
// clients connected to it.
const ReservedChannel = "__shardis__:cluster"

// ChannelWatcher is a TopologyWatcher that SUBSCRIBEs to Channel on a node
// and treats every message as a change (its payload is not parsed yet).
// Against redis-server nothing is published there, and the client relies
// on MOVED replies and the periodic refresh.
type ChannelWatcher struct {
	// Channel is the channel to subscribe to. Default ReservedChannel.
	Channel string
}

// Watch implements TopologyWatcher.
func (w ChannelWatcher) Watch(ctx context.Context, addr string, node *redis.Client, notify func(TopologyEvent)) error {
	ch := w.Channel
	if ch == "" {
		ch = ReservedChannel
	}
	ps := node.Subscribe(ctx, ch)
	defer ps.Close()
	// A blocked receive does not watch ctx; closing the subscription
	// ends it.
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()
	if _, err := ps.Receive(ctx); err != nil {
		return err
	}
	for {
		msg, err := ps.ReceiveMessage(ctx)
		if err != nil {
			return err
		}
		notify(TopologyEvent{Node: addr, Epoch: -1, Payload: msg.Payload})
	}
}

// startWatchers runs the Watcher on up to WatchNodes masters.
func (c *Client) startWatchers(ctx context.Context) {
	for i := range c.opt.WatchNodes {
		c.done.Add(1)
		go func() {
			defer c.done.Done()
			for ctx.Err() == nil {
				masters, _ := c.table.Load().addrs()
				if len(masters) == 0 {
					return
				}
				addr := masters[(i+rand.IntN(len(masters)))%len(masters)]
				rdb := redis.NewClient(&redis.Options{
					Addr: addr, Username: c.opt.Username, Password: c.opt.Password,
					TLSConfig: c.opt.TLSConfig, DialTimeout: c.opt.DialTimeout, DialerRetries: 1,
				})
				err := c.opt.Watcher.Watch(ctx, addr, rdb, func(ev TopologyEvent) {
					c.requestRefresh(false, "push", "")
				})
				rdb.Close()
				if ctx.Err() != nil {
					return
				}
				c.opt.Logger.Warn("cluster: topology watch ended", "node", addr, "err", err)
				// Events may have been missed while the watch was down.
				c.requestRefresh(false, "push", "")
				t := time.NewTimer(c.opt.MinRefreshInterval)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
		}()
	}
}
