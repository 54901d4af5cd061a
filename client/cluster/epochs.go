package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// A slot changes hands, in the client's map as in Redis
// (clusterUpdateSlotsConfigWith), only to a claim with a strictly higher
// config epoch than the owner's. The client learns config epochs from
// three sources:
//
//   - a refresh: CLUSTER SLOTS (addresses, replicas) pipelined with
//     CLUSTER NODES (each master's config epoch) on one connection; see
//     [Client.queryView];
//   - a pushed "slots" line's config-epoch=<n> (patchNotice);
//   - nothing from a MOVED reply, which carries no epoch (see moved).
//
// Per slot the client keeps (Client.slotEpochs) the config epoch of the
// claim that gave the map its owner, while the map's owner is the node it
// was given for; a node's config epoch only grows, so it stays a lower
// bound of the owner's epoch. A refresh or notice naming another owner
// with a config epoch no higher than the kept one is stale and changes
// nothing for that slot, so a refresh read from a node that has not heard
// of a move yet cannot undo a newer notice, and a notice older than a
// refresh cannot undo it either. A claim without an epoch (a node that
// does not answer CLUSTER NODES, an older shardnode's notice) applies as
// it comes.

// nodesView is what a CLUSTER NODES reply says about masters: each
// master's config epoch by node id, and the owner of every slot (an index
// into ids, -1 for none).
type nodesView struct {
	ids    []string
	epochs []uint64
	owner  []int32
}

// parseClusterNodes reads the masters' config epochs and slots from a
// CLUSTER NODES reply: one line per node, "<id> <ip:port@cport[,host]>
// <flags> <master-id|-> <ping-sent> <pong-recv> <config-epoch>
// <link-state> [<slot>|<start>-<end>|[<slot>-><-id>]...]". Replicas and
// the open-slot tokens ("[...]") are skipped.
func parseClusterNodes(text string) (*nodesView, error) {
	v := &nodesView{owner: make([]int32, SlotCount)}
	for i := range v.owner {
		v.owner[i] = -1
	}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 8 {
			return nil, fmt.Errorf("cluster: CLUSTER NODES line %q: fewer than 8 fields", line)
		}
		epoch, err := strconv.ParseUint(f[6], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("cluster: CLUSTER NODES line %q: config epoch: %w", line, err)
		}
		if !hasFlag(f[2], "master") {
			continue
		}
		idx := int32(len(v.ids))
		v.ids = append(v.ids, f[0])
		v.epochs = append(v.epochs, epoch)
		for _, tok := range f[8:] {
			if strings.HasPrefix(tok, "[") {
				continue
			}
			rs, err := parseSlotList(tok)
			if err != nil {
				return nil, fmt.Errorf("cluster: CLUSTER NODES line %q: %w", line, err)
			}
			for _, r := range rs {
				for s := r[0]; s <= r[1]; s++ {
					v.owner[s] = idx
				}
			}
		}
	}
	return v, nil
}

func hasFlag(flags, want string) bool {
	for _, f := range strings.Split(flags, ",") {
		if f == want {
			return true
		}
	}
	return false
}

// ownerEpochs returns the config epoch of each master of a CLUSTER SLOTS
// reply by its address, from a CLUSTER NODES reply of the same node; nil
// when the two disagree on any slot's owner (the node's view changed
// between them) or CLUSTER SLOTS gave no node ids, so that such a refresh
// counts as one without epochs rather than pairing an owner with another
// node's epoch.
func ownerEpochs(slots []redis.ClusterSlot, nv *nodesView) map[string]uint64 {
	if nv == nil {
		return nil
	}
	epochs := map[string]uint64{}
	assigned := 0
	for _, r := range slots {
		if len(r.Nodes) == 0 || r.Start < 0 || r.End >= SlotCount || r.Start > r.End {
			continue
		}
		m := r.Nodes[0]
		for s := r.Start; s <= r.End; s++ {
			i := nv.owner[s]
			if i < 0 || nv.ids[i] != m.ID {
				return nil
			}
		}
		assigned += r.End - r.Start + 1
		epochs[m.Addr] = nv.epochs[nv.owner[r.Start]]
	}
	for _, i := range nv.owner {
		if i >= 0 {
			assigned--
		}
	}
	if assigned != 0 { // CLUSTER NODES has slots CLUSTER SLOTS has not
		return nil
	}
	return epochs
}

// queryView asks addr for CLUSTER SLOTS and CLUSTER NODES in one pipeline,
// through go-redis's node client when there is one (rdb), else a
// short-lived connection. It returns the slots and the config epoch of
// each master by address (nil when CLUSTER NODES failed or disagreed: a
// refresh without epochs). A failed CLUSTER SLOTS is an error.
func (c *Client) queryView(ctx context.Context, addr string, rdb *redis.Client) ([]redis.ClusterSlot, map[string]uint64, error) {
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, internalCtx{}, true), c.opt.RefreshTimeout)
	defer cancel()
	if rdb == nil {
		rdb = redis.NewClient(&redis.Options{
			Addr: addr, Username: c.opt.Username, Password: c.opt.Password, TLSConfig: c.opt.TLSConfig,
			DialTimeout: min(c.opt.DialTimeout, c.opt.RefreshTimeout), DialerRetries: 1, MaxRetries: -1,
			PoolSize: 1, DisableIdentity: true,
		})
		defer rdb.Close()
	}
	var slotsCmd *redis.ClusterSlotsCmd
	var nodesCmd *redis.StringCmd
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		slotsCmd = p.ClusterSlots(ctx)
		nodesCmd = p.ClusterNodes(ctx)
		return nil
	})
	slots, err := slotsCmd.Result()
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: CLUSTER SLOTS on %s: %w", addr, err)
	}
	if len(slots) == 0 {
		return nil, nil, fmt.Errorf("cluster: CLUSTER SLOTS on %s: no slot is assigned", addr)
	}
	text, err := nodesCmd.Result()
	if err != nil {
		var rerr redis.Error
		if !errors.As(err, &rerr) {
			// The connection broke after CLUSTER SLOTS: its reply may be
			// whole, but the node is failing; ask the next one.
			return nil, nil, fmt.Errorf("cluster: CLUSTER NODES on %s: %w", addr, err)
		}
		c.opt.Logger.Debug("cluster: refresh without config epochs", "node", addr, "err", err)
		return slots, nil, nil
	}
	nv, err := parseClusterNodes(text)
	if err != nil {
		c.opt.Logger.Debug("cluster: refresh without config epochs", "node", addr, "err", err)
		return slots, nil, nil
	}
	return slots, ownerEpochs(slots, nv), nil
}

// knownEpoch returns the kept config epoch of slot s's owner cur, if one
// is known. Callers hold c.mu.
func (c *Client) knownEpoch(s int, cur string) (uint64, bool) {
	if c.slotEpochs == nil || cur == "" || c.slotEpochs[s].addr != cur {
		return 0, false
	}
	return c.slotEpochs[s].epoch, true
}

// apply installs a freshly read table, whose masters' config epochs are
// epochs (nil: unknown), and returns how many slots changed master and
// how many the refresh named another owner for but lost to the kept
// config epoch. Per slot: the refresh's owner wins unless the slot's
// owner has a kept config epoch and the refresh names another node with
// an epoch no higher (or without one while the refresh has epochs for
// others, or no node at all: gossip never unassigns a slot, so a view
// without an owner is one that has not heard of it). A refresh without
// any epochs applies as read, as before epochs were kept. Changed slots
// are pending until go-redis's state catches up.
func (c *Client) apply(t *slotTable, epochs map[string]uint64) (changed, stale int) {
	c.mu.Lock()
	old := c.table.Load()
	if epochs != nil && c.slotEpochs == nil {
		c.slotEpochs = make([]ownerEpoch, SlotCount)
	}
	var keep map[string][]int // slots kept against the refresh, by owner
	for s := range SlotCount {
		cur, r := old.master(s), t.master(s)
		held, known := c.knownEpoch(s, cur)
		re, rok := epochs[r]
		switch {
		case r == cur:
			if rok && (!known || re > held) {
				c.slotEpochs[s] = ownerEpoch{r, re}
			}
		case known && epochs != nil && (!rok || re <= held):
			if keep == nil {
				keep = map[string][]int{}
			}
			keep[cur] = append(keep[cur], s)
			stale++
		case c.slotEpochs != nil:
			if rok {
				c.slotEpochs[s] = ownerEpoch{r, re}
			} else {
				c.slotEpochs[s] = ownerEpoch{}
			}
		}
	}
	for addr, slots := range keep {
		t = t.withOwnersFrom(old, slots, addr)
	}
	if epochs != nil {
		c.nodeEpochs = epochs
	}
	diff := old.diff(t)
	same := len(diff) == 0 && old.sameReplicas(t)
	if !same {
		c.table.Store(t)
		for _, s := range diff {
			if m := t.master(s); m != "" {
				c.pending[s] = m
			} else {
				delete(c.pending, s)
			}
		}
		c.npending.Store(int32(len(c.pending)))
	}
	c.mu.Unlock()
	if !same && c.ClusterClient != nil {
		c.ClusterClient.ReloadState(context.Background())
	}
	return len(diff), stale
}
