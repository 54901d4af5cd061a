package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReservedChannel is the node-local channel on which shardnode announces
// cluster configuration changes to its own clients. It is not a
// cluster-wide PUBLISH: each node tells only the clients connected to it
// what it learned. The payload is one line per change, "\n"-separated,
// parsed by [ParseTopology]:
//
//	epoch <current-epoch> <event> <node-id> <ip:port> [<slots>] [<key>=<value>...]
//
// A "slots" line ends with config-epoch=<n>, the new owner's config epoch
// (nodes before it sent none).
const ReservedChannel = "__shardis__:cluster"

// Kinds of [TopologyChange].
const (
	// ChangeSlots: the node now serves Slots (a reshard, a failover's
	// promoted replica, a whole-slot migration's claim).
	ChangeSlots = "slots"
	// ChangeUnassigned: no node serves Slots any more (NodeID and Addr "-").
	ChangeUnassigned = "unassigned"
	// ChangeFail: the node was flagged FAIL.
	ChangeFail = "fail"
	// ChangeRecover: the node's FAIL flag was cleared.
	ChangeRecover = "recover"
	// ChangeJoin and ChangeLeave: the node entered or left the
	// announcing node's table.
	ChangeJoin  = "join"
	ChangeLeave = "leave"
	// ChangeAddress: the node's address changed to Addr.
	ChangeAddress = "address"
	// ChangeFailover: the announcing node won a failover election.
	ChangeFailover = "failover"
)

// TopologyChange is one line of a pushed notice.
type TopologyChange struct {
	// Epoch is the announcing node's current epoch.
	Epoch uint64
	// Kind is one of the Change* constants (others may be added; a client
	// refreshes on a kind it does not know).
	Kind string
	// NodeID and Addr ("ip:port") name the node the change is about.
	NodeID, Addr string
	// Slots are inclusive [start, end] ranges (ChangeSlots and
	// ChangeUnassigned only).
	Slots [][2]int
	// ConfigEpoch is the config epoch of the node that now serves Slots,
	// as the announcing node knows it (the line's config-epoch=<n>);
	// HasConfigEpoch says whether the line carried one (ChangeSlots from
	// a node that sends it). Of two claims on a slot the higher config
	// epoch wins, whatever order the notices arrive in.
	ConfigEpoch    uint64
	HasConfigEpoch bool
}

// ParseTopology parses a notice of the reserved channel.
func ParseTopology(payload string) ([]TopologyChange, error) {
	var out []TopologyChange
	for _, line := range strings.Split(payload, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[0] != "epoch" {
			return nil, fmt.Errorf("cluster: topology notice %q: want epoch <e> <event> <id> <addr> [<slots>]", line)
		}
		epoch, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("cluster: topology notice %q: %w", line, err)
		}
		ch := TopologyChange{Epoch: epoch, Kind: f[2], NodeID: f[3], Addr: f[4]}
		opts := f[5:]
		if len(opts) > 0 && !strings.Contains(opts[0], "=") {
			if ch.Slots, err = parseSlotList(opts[0]); err != nil {
				return nil, fmt.Errorf("cluster: topology notice %q: %w", line, err)
			}
			opts = opts[1:]
		}
		// key=value tokens; keys this client does not know are skipped,
		// so that a node may add some.
		for _, o := range opts {
			k, v, ok := strings.Cut(o, "=")
			if !ok {
				return nil, fmt.Errorf("cluster: topology notice %q: token %q: want <key>=<value>", line, o)
			}
			if k == "config-epoch" {
				if ch.ConfigEpoch, err = strconv.ParseUint(v, 10, 64); err != nil {
					return nil, fmt.Errorf("cluster: topology notice %q: config-epoch: %w", line, err)
				}
				ch.HasConfigEpoch = true
			}
		}
		out = append(out, ch)
	}
	return out, nil
}

// parseSlotList parses "a-b,c,...".
func parseSlotList(text string) ([][2]int, error) {
	var out [][2]int
	for _, part := range strings.Split(text, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("slots %q: %w", text, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("slots %q: %w", text, err)
			}
		}
		if a < 0 || b >= SlotCount || a > b {
			return nil, fmt.Errorf("slots %q: range %d-%d out of bounds", text, a, b)
		}
		out = append(out, [2]int{a, b})
	}
	return out, nil
}

// TopologyEvent is one pushed notice that the cluster configuration
// changed.
type TopologyEvent struct {
	// Node is the address of the node that announced the change.
	Node string
	// Changes are the notice's parsed lines; nil when the payload could not
	// be parsed (the client then only refreshes).
	Changes []TopologyChange
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

// ChannelWatcher is the default TopologyWatcher: it SUBSCRIBEs to Channel
// on a node and parses every message with [ParseTopology]. Against
// redis-server nothing is published there, and the client relies on
// MOVED replies and the periodic refresh.
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
		changes, _ := ParseTopology(msg.Payload)
		notify(TopologyEvent{Node: addr, Changes: changes, Payload: msg.Payload})
	}
}

// startWatchers runs the Watcher on up to WatchNodes masters, each on a
// different one while there are enough.
func (c *Client) startWatchers(ctx context.Context) {
	for i := range c.opt.WatchNodes {
		c.done.Add(1)
		go func() {
			defer c.done.Done()
			for round := 0; ctx.Err() == nil; round++ {
				masters, _ := c.table.Load().addrs()
				if len(masters) == 0 {
					return
				}
				addr := masters[(i+round*c.opt.WatchNodes)%len(masters)]
				rdb := redis.NewClient(&redis.Options{
					Addr: addr, Username: c.opt.Username, Password: c.opt.Password,
					TLSConfig: c.opt.TLSConfig, DialTimeout: c.opt.DialTimeout, DialerRetries: 1,
					DisableIdentity: true,
				})
				err := c.opt.Watcher.Watch(ctx, addr, rdb, c.pushed)
				rdb.Close()
				if ctx.Err() != nil {
					return
				}
				c.opt.Logger.Debug("cluster: topology watch ended", "node", addr, "err", err)
				// Events may have been missed while the watch was down.
				c.requestRefresh(false, "push", "")
				t := time.NewTimer(c.opt.ErrorRefreshInterval)
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

// pushed handles one notice: slot ranges with a new master are patched
// into the local map at once (commands route there before any refresh,
// without a MOVED), unless the notice is older than what the map holds
// (patchNotice), and a refresh is asked for, rate-limited like a
// connection error's, to learn what the notice does not say (replicas).
func (c *Client) pushed(ev TopologyEvent) {
	c.stats.pushes.Add(1)
	patched, stale := c.patchNotice(ev.Changes)
	if patched > 0 {
		c.stats.patched.Add(int64(patched))
		c.ClusterClient.ReloadState(context.Background())
	}
	c.opt.Logger.Debug("cluster: topology notice", "node", ev.Node, "changes", len(ev.Changes),
		"patched", patched, "stale", stale)
	c.requestRefresh(true, "push", "")
}

// ownerEpoch is the config epoch a notice gave for a slot's owner.
type ownerEpoch struct {
	// addr is the owner the epoch is of, "" when none is known.
	addr  string
	epoch uint64
}

// patchNotice applies a notice's "slots" lines to the local map and
// returns how many slots changed master and how many a line claimed but
// lost to a higher config epoch. Per slot the client keeps the config
// epoch of the owner it has (c.slotEpochs), as notices and refreshes told
// it (epochs.go); it holds while the map's owner is the node it was given
// for (back to that node, it is still a lower bound, since a node's
// config epoch only grows). A line claiming a slot for another node wins
// only with a strictly higher config epoch (Redis's rule,
// clusterUpdateSlotsConfigWith) or when the owner's is not known; so a
// notice that arrives after a newer one (two nodes announcing one move, a
// node behind the others) or after a newer refresh cannot undo it. A
// line without a config epoch (an older node) applies in arrival order,
// as before. "unassigned" lines change nothing, and a refresh unassigns
// only slots whose owner's epoch is unknown (apply): a slot no node
// serves any more keeps its last owner in the map, whose replies say so.
func (c *Client) patchNotice(changes []TopologyChange) (patched, stale int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.table.Load()
	for _, ch := range changes {
		if ch.Kind != ChangeSlots || ch.Addr == "" || ch.Addr == "-" {
			continue
		}
		if ch.HasConfigEpoch {
			if c.slotEpochs == nil {
				c.slotEpochs = make([]ownerEpoch, SlotCount)
			}
			if e, ok := c.nodeEpochs[ch.Addr]; !ok || ch.ConfigEpoch > e {
				if c.nodeEpochs == nil {
					c.nodeEpochs = map[string]uint64{}
				}
				c.nodeEpochs[ch.Addr] = ch.ConfigEpoch
			}
		}
		var slots []int
		for _, r := range ch.Slots {
			for s := r[0]; s <= r[1]; s++ {
				cur := t.master(s)
				var known *ownerEpoch // the config epoch of cur, if known
				if c.slotEpochs != nil && c.slotEpochs[s].addr != "" && c.slotEpochs[s].addr == cur {
					known = &c.slotEpochs[s]
				}
				switch {
				case ch.Addr == cur: // no move; maybe a newer epoch
					if ch.HasConfigEpoch && (known == nil || ch.ConfigEpoch > known.epoch) {
						c.slotEpochs[s] = ownerEpoch{ch.Addr, ch.ConfigEpoch}
					}
				case ch.HasConfigEpoch && known != nil && ch.ConfigEpoch <= known.epoch:
					stale++
				default:
					if ch.HasConfigEpoch {
						c.slotEpochs[s] = ownerEpoch{ch.Addr, ch.ConfigEpoch}
					} else if c.slotEpochs != nil {
						c.slotEpochs[s] = ownerEpoch{}
					}
					slots = append(slots, s)
				}
			}
		}
		if len(slots) == 0 {
			continue
		}
		t = t.withOwners(slots, ch.Addr)
		for _, s := range slots {
			c.pending[s] = ch.Addr
		}
		patched += len(slots)
	}
	if patched > 0 {
		c.table.Store(t)
		c.npending.Store(int32(len(c.pending)))
	}
	return patched, stale
}
