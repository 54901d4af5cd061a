package admin

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// SlotMover moves the keys of one slot from one master to another and
// hands the slot over. KeyMover does it key by key as redis-cli does;
// MigrationMover (the default) with whole-slot migration. Supports lets
// the operations pick a mover only when both masters support it, and
// fall back to KeyMover otherwise. A mover that also implements
// RangeMover gets the consecutive slots a reshard or rebalance takes from
// one source in one call.
type SlotMover interface {
	// Supports reports whether the mover can move slots between src and
	// dst.
	Supports(ctx context.Context, cl *Cluster, src, dst *Node) bool
	// MoveSlot moves slot from src to dst. cold skips opening the slot
	// (SETSLOT IMPORTING/MIGRATING) and handing it over (SETSLOT NODE), as
	// the fix of an uncovered slot with keys on several nodes needs.
	MoveSlot(ctx context.Context, cl *Cluster, slot int, src, dst *Node, cold bool) error
}

// RangeMover is a SlotMover that moves several slots of one source in one
// operation.
type RangeMover interface {
	SlotMover
	// MoveSlots moves slots (ascending) from src to dst, opened and handed
	// over (never cold).
	MoveSlots(ctx context.Context, cl *Cluster, slots []int, src, dst *Node) error
}

// KeyMover is the key-by-key SlotMover of redis-cli's
// clusterManagerMoveSlot: SETSLOT IMPORTING on the target, MIGRATING on
// the source, GETKEYSINSLOT + MIGRATE ... KEYS until the slot is empty,
// then SETSLOT NODE on the target first (it spreads the news), the
// source, and every other master.
type KeyMover struct{}

// Supports implements SlotMover: every cluster node can move keys.
func (KeyMover) Supports(context.Context, *Cluster, *Node, *Node) bool { return true }

// MoveSlot implements SlotMover.
func (KeyMover) MoveSlot(ctx context.Context, cl *Cluster, slot int, src, dst *Node, cold bool) error {
	if !cold {
		if err := cl.must(ctx, dst, "cluster", "setslot", slot, "importing", src.ID); err != nil {
			return err
		}
		if err := cl.must(ctx, src, "cluster", "setslot", slot, "migrating", dst.ID); err != nil {
			return err
		}
	}
	if err := cl.migrateKeys(ctx, slot, src, dst); err != nil {
		return err
	}
	if cold {
		return nil
	}
	if err := cl.must(ctx, dst, "cluster", "setslot", slot, "node", dst.ID); err != nil {
		return err
	}
	// A source that just gave away its last slot may already have been
	// turned into a replica by the target's news; that is not an error.
	if err := cl.do(ctx, src, "cluster", "setslot", slot, "node", dst.ID).Err(); err != nil &&
		!strings.HasPrefix(err.Error(), "ERR Please use SETSLOT only with masters") {
		return fmt.Errorf("admin: CLUSTER SETSLOT %d NODE on %s: %w", slot, src.Addr, err)
	}
	for _, n := range cl.Nodes {
		if n == src || n == dst || !n.IsMaster() {
			continue
		}
		if err := cl.must(ctx, n, "cluster", "setslot", slot, "node", dst.ID); err != nil {
			return err
		}
	}
	return nil
}

// migrateKeys moves every key of slot from src to dst in batches of
// Options.Pipeline keys. A BUSYKEY (the key exists on the target) is
// retried with REPLACE when Options.Replace is set or the values are the
// same on both sides (DEBUG DIGEST-VALUE), and stops the move otherwise.
func (cl *Cluster) migrateKeys(ctx context.Context, slot int, src, dst *Node) error {
	host, port := dst.hostPort()
	timeoutMS := cl.opt.Timeout.Milliseconds()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		keys, err := cl.do(ctx, src, "cluster", "getkeysinslot", slot, cl.opt.Pipeline).StringSlice()
		if err != nil {
			return fmt.Errorf("admin: CLUSTER GETKEYSINSLOT %d on %s: %w", slot, src.Addr, err)
		}
		if len(keys) == 0 {
			return nil
		}
		migrate := func(replace bool) error {
			args := []interface{}{"migrate", host, port, "", 0, timeoutMS}
			if replace {
				args = append(args, "replace")
			}
			args = append(args, "keys")
			for _, k := range keys {
				args = append(args, k)
			}
			return cl.do(ctx, src, args...).Err()
		}
		err = migrate(cl.opt.Replace)
		if err != nil && strings.Contains(err.Error(), "CLUSTERDOWN") {
			// The target (or the source) saw the cluster down for a moment
			// (a node missed pings); wait for both to report ok, once.
			if werr := cl.waitNodesOK(ctx, src, dst); werr != nil {
				return fmt.Errorf("admin: MIGRATE slot %d from %s to %s: %w (then %w)", slot, src.Addr, dst.Addr, err, werr)
			}
			err = migrate(cl.opt.Replace)
		}
		if err != nil && strings.Contains(err.Error(), "BUSYKEY") {
			same, derr := cl.sameValues(ctx, src, dst, keys)
			if derr != nil {
				return derr
			}
			if !same && !cl.opt.Replace {
				return fmt.Errorf("admin: slot %d: keys exist on %s with different values; move them by hand or use Replace", slot, dst.Addr)
			}
			err = migrate(true)
		}
		if err != nil {
			return fmt.Errorf("admin: MIGRATE slot %d from %s to %s: %w", slot, src.Addr, dst.Addr, err)
		}
	}
}

// sameValues compares the keys' DEBUG DIGEST-VALUE on both nodes; keys
// missing on the target count as the same.
func (cl *Cluster) sameValues(ctx context.Context, a, b *Node, keys []string) (bool, error) {
	args := []interface{}{"debug", "digest-value"}
	for _, k := range keys {
		args = append(args, k)
	}
	da, err := cl.do(ctx, a, args...).StringSlice()
	if err != nil {
		return false, fmt.Errorf("admin: DEBUG DIGEST-VALUE on %s: %w", a.Addr, err)
	}
	db, err := cl.do(ctx, b, args...).StringSlice()
	if err != nil {
		return false, fmt.Errorf("admin: DEBUG DIGEST-VALUE on %s: %w", b.Addr, err)
	}
	zero := strings.Repeat("0", 40)
	for i := range da {
		if i < len(db) && db[i] != zero && da[i] != db[i] {
			return false, nil
		}
	}
	return true, nil
}

// mover returns Options.Mover when it supports src and dst, else KeyMover.
func (cl *Cluster) mover(ctx context.Context, src, dst *Node) SlotMover {
	if cl.opt.Mover.Supports(ctx, cl, src, dst) {
		return cl.opt.Mover
	}
	return KeyMover{}
}

// moveSlot moves one slot and updates the in-memory view.
func (cl *Cluster) moveSlot(ctx context.Context, slot int, src, dst *Node) error {
	if err := cl.mover(ctx, src, dst).MoveSlot(ctx, cl, slot, src, dst, false); err != nil {
		return err
	}
	src.Slots = removeSlot(src.Slots, slot)
	dst.Slots = insertSlot(dst.Slots, slot)
	return nil
}

// moveOpenSlot finishes the move of a slot already open (MIGRATING on
// src, IMPORTING on dst) key by key, whatever the Mover: a whole-slot
// migration cannot take over a slot opened with SETSLOT.
func (cl *Cluster) moveOpenSlot(ctx context.Context, slot int, src, dst *Node) error {
	if err := (KeyMover{}).MoveSlot(ctx, cl, slot, src, dst, false); err != nil {
		return err
	}
	src.Slots = removeSlot(src.Slots, slot)
	dst.Slots = insertSlot(dst.Slots, slot)
	return nil
}

func removeSlot(s []int, slot int) []int {
	out := s[:0:0]
	for _, x := range s {
		if x != slot {
			out = append(out, x)
		}
	}
	return out
}

func insertSlot(s []int, slot int) []int {
	for i, x := range s {
		if x == slot {
			return s
		}
		if x > slot {
			out := append(append(append([]int{}, s[:i]...), slot), s[i:]...)
			return out
		}
	}
	return append(s, slot)
}

// setSlotOwner makes n the owner of slot as redis-cli's
// clusterManagerSetSlotOwner does: in one MULTI, DELSLOTS (ignored if not
// assigned), ADDSLOTS, optionally SETSLOT STABLE, and BUMPEPOCH, so the
// claim wins over older ones.
func (cl *Cluster) setSlotOwner(ctx context.Context, n *Node, slot int, clear bool) error {
	cctx, cancel := cl.opt.ctx(ctx)
	defer cancel()
	var add, bump *redis.Cmd
	_, err := n.client.TxPipelined(cctx, func(p redis.Pipeliner) error {
		p.Do(cctx, "cluster", "delslots", slot)
		add = p.Do(cctx, "cluster", "addslots", slot)
		if clear {
			p.Do(cctx, "cluster", "setslot", slot, "stable")
		}
		bump = p.Do(cctx, "cluster", "bumpepoch")
		return nil
	})
	if add != nil && add.Err() != nil {
		return fmt.Errorf("admin: CLUSTER ADDSLOTS %d on %s: %w", slot, n.Addr, add.Err())
	}
	if bump != nil && bump.Err() != nil {
		return fmt.Errorf("admin: CLUSTER BUMPEPOCH on %s: %w", n.Addr, bump.Err())
	}
	if err != nil && add == nil {
		return fmt.Errorf("admin: set owner of slot %d on %s: %w", slot, n.Addr, err)
	}
	n.Slots = insertSlot(n.Slots, slot)
	return nil
}

// clearSlot is CLUSTER SETSLOT slot STABLE on n.
func (cl *Cluster) clearSlot(ctx context.Context, n *Node, slot int) error {
	delete(n.Migrating, slot)
	delete(n.Importing, slot)
	return cl.must(ctx, n, "cluster", "setslot", slot, "stable")
}

// delSlot is CLUSTER DELSLOTS slot on n, ignoring "not assigned".
func (cl *Cluster) delSlot(ctx context.Context, n *Node, slot int) error {
	err := cl.do(ctx, n, "cluster", "delslots", slot).Err()
	n.Slots = removeSlot(n.Slots, slot)
	if err != nil && !strings.Contains(err.Error(), "already unassigned") {
		return fmt.Errorf("admin: CLUSTER DELSLOTS %d on %s: %w", slot, n.Addr, err)
	}
	return nil
}

// waitNodesOK waits, up to WaitTimeout, until every one of nodes reports
// cluster_state:ok.
func (cl *Cluster) waitNodesOK(ctx context.Context, nodes ...*Node) error {
	return poll(ctx, cl.opt.WaitTimeout, "cluster_state:ok", func() (bool, error) {
		for _, n := range nodes {
			info, err := cl.do(ctx, n, "cluster", "info").Text()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false, nil
			}
		}
		return true, nil
	})
}
