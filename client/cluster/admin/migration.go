package admin

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// MigrationMover is the default SlotMover: whole-slot migration (CLUSTER
// MIGRATION IMPORT on the target, Redis 8.4's atomic slot migration, which
// shardnode implements) when both masters support it, detected with
// COMMAND INFO cluster|migration; otherwise the operations fall back to
// KeyMover. The target copies the slots' data and the writes made
// meanwhile, then claims them with a new config epoch; the source never
// serves a half-moved slot, so clients see no ASK redirects.
type MigrationMover struct {
	// Poll is the interval between two CLUSTER MIGRATION STATUS requests.
	// Default 20ms.
	Poll time.Duration
}

// supportCache remembers per node address whether CLUSTER MIGRATION is
// there (COMMAND INFO is asked once per node and process).
var supportCache sync.Map

// Supports implements SlotMover.
func (MigrationMover) Supports(ctx context.Context, cl *Cluster, src, dst *Node) bool {
	return cl.supportsMigration(ctx, src) && cl.supportsMigration(ctx, dst)
}

func (cl *Cluster) supportsMigration(ctx context.Context, n *Node) bool {
	key := n.ID + "@" + n.Addr
	if v, ok := supportCache.Load(key); ok {
		return v.(bool)
	}
	// Redis 7.0 answers [nil] for an unknown subcommand, Redis 8.4 and
	// shardnode the subcommand's entry.
	v, err := cl.do(ctx, n, "command", "info", "cluster|migration").Slice()
	ok := err == nil && len(v) == 1 && v[0] != nil
	if err == nil {
		supportCache.Store(key, ok)
	}
	return ok
}

// MoveSlot implements SlotMover. A cold move (the fix of a slot with keys
// on several nodes) has no whole-slot form and is done key by key.
func (m MigrationMover) MoveSlot(ctx context.Context, cl *Cluster, slot int, src, dst *Node, cold bool) error {
	if cold {
		return KeyMover{}.MoveSlot(ctx, cl, slot, src, dst, true)
	}
	return m.MoveSlots(ctx, cl, []int{slot}, src, dst)
}

// MoveSlots moves every one of slots (ascending) from src to dst in one
// migration task and waits until the target reports it completed.
func (m MigrationMover) MoveSlots(ctx context.Context, cl *Cluster, slots []int, src, dst *Node) error {
	args := []interface{}{"cluster", "migration", "import"}
	for i := 0; i < len(slots); {
		j := i
		for j+1 < len(slots) && slots[j+1] == slots[j]+1 {
			j++
		}
		args = append(args, slots[i], slots[j])
		i = j + 1
	}
	id, err := cl.do(ctx, dst, args...).Text()
	if err != nil {
		return fmt.Errorf("admin: CLUSTER MIGRATION IMPORT of %d slots on %s: %w", len(slots), dst.Addr, err)
	}
	poll := m.Poll
	if poll <= 0 {
		poll = 20 * time.Millisecond
	}
	deadline := time.Now().Add(cl.opt.WaitTimeout)
	for {
		st, err := cl.migrationStatus(ctx, dst, id)
		if err != nil {
			return err
		}
		switch st["state"] {
		case "completed":
			return nil
		case "failed", "canceled":
			return fmt.Errorf("admin: migration %s of slots %s from %s to %s %s: %s", id, st["slots"], src.Addr, dst.Addr, st["state"], st["last_error"])
		}
		if time.Now().After(deadline) {
			_ = cl.do(ctx, dst, "cluster", "migration", "cancel", "id", id).Err()
			return fmt.Errorf("admin: migration %s from %s to %s still %s after %v", id, src.Addr, dst.Addr, st["state"], cl.opt.WaitTimeout)
		}
		select {
		case <-ctx.Done():
			_ = cl.do(context.Background(), dst, "cluster", "migration", "cancel", "id", id).Err()
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

// migrationStatus reads one task of CLUSTER MIGRATION STATUS ID id as
// field -> value (a RESP3 map or a RESP2 flat array per task).
func (cl *Cluster) migrationStatus(ctx context.Context, n *Node, id string) (map[string]string, error) {
	v, err := cl.do(ctx, n, "cluster", "migration", "status", "id", id).Slice()
	if err != nil {
		return nil, fmt.Errorf("admin: CLUSTER MIGRATION STATUS on %s: %w", n.Addr, err)
	}
	if len(v) != 1 {
		return nil, fmt.Errorf("admin: CLUSTER MIGRATION STATUS on %s: no task %s", n.Addr, id)
	}
	out := map[string]string{}
	switch task := v[0].(type) {
	case map[interface{}]interface{}:
		for k, val := range task {
			out[fmt.Sprint(k)] = fmt.Sprint(val)
		}
	case []interface{}:
		for i := 0; i+1 < len(task); i += 2 {
			out[fmt.Sprint(task[i])] = fmt.Sprint(task[i+1])
		}
	default:
		return nil, fmt.Errorf("admin: CLUSTER MIGRATION STATUS on %s: unexpected %T", n.Addr, v[0])
	}
	out["state"] = strings.ToLower(out["state"])
	return out, nil
}
