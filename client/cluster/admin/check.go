package admin

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Report is the result of a check, with redis-cli's messages.
type Report struct {
	// Consistent is true when every node has the same slot configuration.
	Consistent bool `json:"consistent"`
	// OpenSlots are slots in migrating or importing state somewhere.
	OpenSlots []int `json:"open_slots"`
	// Uncovered are slots no node serves.
	Uncovered []int `json:"uncovered"`
	// Unreachable are known nodes that did not answer.
	Unreachable []string `json:"unreachable,omitempty"`
	// Messages are the [OK], [WARNING] and [ERR] lines, in order.
	Messages []string `json:"messages"`
	// Fixed lists what a fix did.
	Fixed []string `json:"fixed,omitempty"`
	// OK is true when the check found nothing wrong.
	OK bool `json:"ok"`
}

func (r *Report) addf(format string, args ...any) {
	r.Messages = append(r.Messages, fmt.Sprintf(format, args...))
}

// Check reads the cluster through addr and reports, as "redis-cli
// --cluster check" does, whether the nodes agree about the configuration,
// which slots are open and whether all 16384 slots are covered.
func Check(ctx context.Context, addr string, opt *Options) (*Report, error) {
	cl, err := Load(ctx, addr, opt)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return cl.check(ctx, false)
}

// Fix repairs open slots (left by an interrupted move) and uncovered
// slots the way "redis-cli --cluster fix" does, then waits for the nodes
// to agree and checks again; the report is that final check's, with the
// repairs in Fixed. It refuses to reassign slots while a master is
// unreachable.
func Fix(ctx context.Context, addr string, opt *Options) (*Report, error) {
	cl, err := Load(ctx, addr, opt)
	if err != nil {
		return nil, err
	}
	first, err := cl.check(ctx, true)
	cl.Close()
	if err != nil {
		return first, err
	}
	cl, err = Load(ctx, addr, opt)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	if err := cl.waitConsistent(ctx); err != nil {
		return first, err
	}
	final, err := cl.check(ctx, false)
	if final != nil {
		final.Fixed = first.Fixed
	}
	return final, err
}

// check is clusterManagerCheckCluster; with fix it repairs as it goes.
func (cl *Cluster) check(ctx context.Context, fix bool) (*Report, error) {
	r := &Report{Unreachable: cl.Unreachable}
	ok, err := cl.consistent(ctx)
	if err != nil {
		return nil, err
	}
	r.Consistent = ok
	if ok {
		r.addf("[OK] All nodes agree about slots configuration.")
	} else {
		r.addf("[ERR] Nodes don't agree about configuration!")
	}
	open := map[int]bool{}
	for _, n := range cl.Nodes {
		for _, kind := range []struct {
			name  string
			slots map[int]string
		}{{"migrating", n.Migrating}, {"importing", n.Importing}} {
			if len(kind.slots) == 0 {
				continue
			}
			var list []string
			for _, s := range sortedKeys(kind.slots) {
				open[s] = true
				list = append(list, strconv.Itoa(s))
			}
			r.addf("[WARNING] Node %s has slots in %s state %s.", n.Addr, kind.name, strings.Join(list, ","))
		}
	}
	for s := range open {
		r.OpenSlots = append(r.OpenSlots, s)
	}
	sort.Ints(r.OpenSlots)
	if len(r.OpenSlots) > 0 {
		r.addf("[WARNING] The following slots are open: %s.", joinInts(r.OpenSlots))
		if fix {
			if err := cl.refuseUnreachable("open slots"); err != nil {
				return r, err
			}
			for _, s := range r.OpenSlots {
				if err := cl.fixOpenSlot(ctx, s, r); err != nil {
					return r, err
				}
			}
		}
	}
	covered := make([]bool, SlotCount)
	for _, n := range cl.Nodes {
		for _, s := range n.Slots {
			covered[s] = true
		}
	}
	for s, c := range covered {
		if !c {
			r.Uncovered = append(r.Uncovered, s)
		}
	}
	if len(r.Uncovered) == 0 {
		r.addf("[OK] All %d slots covered.", SlotCount)
	} else {
		r.addf("[ERR] Not all %d slots are covered by nodes.", SlotCount)
		if fix {
			if err := cl.refuseUnreachable("slots coverage"); err != nil {
				return r, err
			}
			if err := cl.fixCoverage(ctx, r.Uncovered, r); err != nil {
				return r, err
			}
		}
	}
	r.OK = r.Consistent && len(r.OpenSlots) == 0 && len(r.Uncovered) == 0
	return r, nil
}

func (cl *Cluster) refuseUnreachable(what string) error {
	if cl.UnreachableMasters > 0 {
		return fmt.Errorf("admin: fixing %s with %d unreachable masters could lose data; bring them back first", what, cl.UnreachableMasters)
	}
	return nil
}

func sortedKeys(m map[int]string) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// mostKeys returns the master among nodes with the most keys in slot (the
// first on ties, even with none), as clusterManagerGetNodeWithMostKeysInSlot.
func (cl *Cluster) mostKeys(ctx context.Context, nodes []*Node, slot int) (*Node, error) {
	var best *Node
	var most int64
	for _, n := range nodes {
		if !n.IsMaster() {
			continue
		}
		c, err := cl.countKeys(ctx, n, slot)
		if err != nil {
			return nil, err
		}
		if best == nil || c > most {
			best, most = n, c
		}
	}
	return best, nil
}

func without(list []*Node, n *Node) []*Node {
	return slices.DeleteFunc(slices.Clone(list), func(x *Node) bool { return x == n })
}

// fixOpenSlot is clusterManagerFixOpenSlot: it finds the slot's owner,
// the nodes migrating and importing it, and moves keys where it makes
// sense (cases 1 to 4 of redis-cli).
func (cl *Cluster) fixOpenSlot(ctx context.Context, slot int, r *Report) error {
	cl.opt.logf(">>> Fixing open slot %d", slot)
	var owners, migrating, importing []*Node
	for _, n := range cl.Masters() {
		if slices.Contains(n.Slots, slot) {
			owners = append(owners, n)
			continue
		}
		c, err := cl.countKeys(ctx, n, slot)
		if err != nil {
			return err
		}
		if c > 0 {
			cl.opt.logf("*** Found keys about slot %d in non-owner node %s!", slot, n.Addr)
			owners = append(owners, n)
		}
	}
	var owner *Node
	if len(owners) == 1 {
		owner = owners[0]
	}
	for _, n := range cl.Masters() {
		_, mig := n.Migrating[slot]
		_, imp := n.Importing[slot]
		switch {
		case mig:
			migrating = append(migrating, n)
		case imp:
			importing = append(importing, n)
		case n != owner:
			c, err := cl.countKeys(ctx, n, slot)
			if err != nil {
				return err
			}
			if c > 0 {
				cl.opt.logf("*** Found keys about slot %d in node %s!", slot, n.Addr)
				importing = append(importing, n)
			}
		}
	}
	if owner == nil {
		cl.opt.logf(">>> No single clear owner for the slot, selecting an owner by # of keys...")
		var err error
		if owner, err = cl.mostKeys(ctx, cl.Nodes, slot); err != nil {
			return err
		}
		if owner == nil {
			return fmt.Errorf("admin: slot %d: can't select a slot owner", slot)
		}
		cl.opt.logf("*** Configuring %s as the slot owner", owner.Addr)
		if err := cl.clearSlot(ctx, owner, slot); err != nil {
			return err
		}
		if err := cl.setSlotOwner(ctx, owner, slot, false); err != nil {
			return err
		}
		migrating, importing = without(migrating, owner), without(importing, owner)
	}
	if len(owners) > 1 {
		for _, n := range owners {
			if n == owner {
				continue
			}
			if err := cl.delSlot(ctx, n, slot); err != nil {
				return err
			}
			if err := cl.must(ctx, n, "cluster", "setslot", slot, "node", owner.ID); err != nil {
				return err
			}
			if err := cl.must(ctx, n, "cluster", "setslot", slot, "importing", owner.ID); err != nil {
				return err
			}
			importing = append(without(importing, n), n)
			migrating = without(migrating, n)
		}
	}
	done := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		cl.opt.logf(">>> %s", msg)
		r.Fixed = append(r.Fixed, msg)
	}
	switch {
	case len(migrating) == 1 && len(importing) == 1:
		src, dst := migrating[0], importing[0]
		done("Case 1: Moving slot %d from %s to %s", slot, src.Addr, dst.Addr)
		return cl.moveOpenSlot(ctx, slot, src, dst)
	case len(migrating) == 0 && len(importing) > 0:
		done("Case 2: Moving all the %d slot keys to its owner %s", slot, owner.Addr)
		for _, n := range importing {
			if n == owner {
				continue
			}
			if err := cl.mover(ctx, n, owner).MoveSlot(ctx, cl, slot, n, owner, true); err != nil {
				return err
			}
			if err := cl.clearSlot(ctx, n, slot); err != nil {
				return err
			}
		}
		for _, n := range cl.Masters() {
			if n == owner {
				continue
			}
			if err := cl.must(ctx, n, "cluster", "setslot", slot, "node", owner.ID); err != nil {
				return err
			}
		}
		return nil
	case len(migrating) == 1 && len(importing) > 1:
		src := migrating[0]
		target := src.Migrating[slot]
		var dst *Node
		for _, n := range importing {
			c, err := cl.countKeys(ctx, n, slot)
			if err != nil {
				return err
			}
			if c > 0 {
				return cl.unhandled(slot, migrating, importing, owner)
			}
			if n.ID == target {
				dst = n
			}
		}
		if dst != nil {
			done("Case 3: Moving slot %d from %s to %s and closing it on all the other importing nodes", slot, src.Addr, dst.Addr)
			if err := cl.moveOpenSlot(ctx, slot, src, dst); err != nil {
				return err
			}
			for _, n := range importing {
				if n != dst {
					if err := cl.clearSlot(ctx, n, slot); err != nil {
						return err
					}
				}
			}
			return nil
		}
		done("Case 3: Closing slot %d on both migrating and importing nodes", slot)
		for _, n := range append([]*Node{src}, importing...) {
			if err := cl.clearSlot(ctx, n, slot); err != nil {
				return err
			}
		}
		return nil
	default:
		closeIt := len(importing) == 0 && len(migrating) == 1
		if closeIt && owner != migrating[0] {
			keys, err := cl.do(ctx, migrating[0], "cluster", "getkeysinslot", slot, 10).StringSlice()
			if err != nil {
				return fmt.Errorf("admin: CLUSTER GETKEYSINSLOT on %s: %w", migrating[0].Addr, err)
			}
			closeIt = len(keys) == 0
		}
		if !closeIt {
			return cl.unhandled(slot, migrating, importing, owner)
		}
		done("Case 4: Closing slot %d on %s", slot, migrating[0].Addr)
		return cl.clearSlot(ctx, migrating[0], slot)
	}
}

func (cl *Cluster) unhandled(slot int, migrating, importing []*Node, owner *Node) error {
	addrs := func(ns []*Node) string {
		s := make([]string, len(ns))
		for i, n := range ns {
			s[i] = n.Addr
		}
		return strings.Join(s, ",")
	}
	o := ""
	if owner != nil {
		o = owner.Addr
	}
	return fmt.Errorf("admin: can't fix slot %d: migrating in %s, importing in %s, owner %s", slot, addrs(migrating), addrs(importing), o)
}

// fixCoverage is clusterManagerFixSlotsCoverage: an uncovered slot goes
// to a random master when no node has keys for it, to the one node that
// has, or to the node with the most keys, which then receives the others'.
// Where redis-cli picks a random master, Fix first picks the master that
// some node's view still names as the slot's owner (viewedOwner).
func (cl *Cluster) fixCoverage(ctx context.Context, uncovered []int, r *Report) error {
	cl.opt.logf(">>> Fixing slots coverage...")
	masters := cl.Masters()
	if len(masters) == 0 {
		return fmt.Errorf("admin: no reachable master to cover slots with")
	}
	for i, s := range uncovered {
		if err := ctx.Err(); err != nil {
			return err
		}
		var holders []*Node
		for _, n := range masters {
			keys, err := cl.do(ctx, n, "cluster", "getkeysinslot", s, 1).StringSlice()
			if err != nil {
				return fmt.Errorf("admin: CLUSTER GETKEYSINSLOT on %s: %w", n.Addr, err)
			}
			if len(keys) > 0 {
				holders = append(holders, n)
			}
		}
		switch len(holders) {
		case 0:
			n, err := cl.viewedOwner(ctx, masters, s)
			if err != nil {
				return err
			}
			if n == nil {
				n = masters[rand.IntN(len(masters))]
			}
			r.Fixed = append(r.Fixed, fmt.Sprintf("Covering slot %d with %s", s, n.Addr))
			if err := cl.setSlotOwner(ctx, n, s, false); err != nil {
				return err
			}
		case 1:
			r.Fixed = append(r.Fixed, fmt.Sprintf("Covering slot %d with %s", s, holders[0].Addr))
			if err := cl.setSlotOwner(ctx, holders[0], s, false); err != nil {
				return err
			}
		default:
			target, err := cl.mostKeys(ctx, holders, s)
			if err != nil {
				return err
			}
			r.Fixed = append(r.Fixed, fmt.Sprintf("Covering slot %d moving keys to %s", s, target.Addr))
			if err := cl.setSlotOwner(ctx, target, s, true); err != nil {
				return err
			}
			for _, src := range holders {
				if src == target {
					continue
				}
				if err := cl.must(ctx, src, "cluster", "setslot", s, "node", target.ID); err != nil {
					return err
				}
				// Importing on the source avoids redirects for MIGRATE.
				if err := cl.must(ctx, src, "cluster", "setslot", s, "importing", target.ID); err != nil {
					return err
				}
				if err := cl.mover(ctx, src, target).MoveSlot(ctx, cl, s, src, target, true); err != nil {
					return err
				}
				if err := cl.clearSlot(ctx, src, s); err != nil {
					return err
				}
			}
		}
		cl.opt.progress("fix", i+1, len(uncovered), fmt.Sprintf("slot %d covered", s))
	}
	return nil
}

// viewedOwner returns the master among masters that some node's CLUSTER
// NODES still names as the owner of slot s, or nil. A slot is uncovered
// when no node claims it for itself, but the other nodes keep the last
// claim they heard (a DELSLOTS is not gossiped). Covering the slot with
// another master can then leave the views apart for good: a node whose
// view names the old owner with a higher config epoch than the new
// owner's keeps it, and its UPDATE message makes the new owner drop the
// slot, which the old owner does not claim. Giving the slot back to the
// node the views name makes every view agree once its epoch is bumped.
func (cl *Cluster) viewedOwner(ctx context.Context, masters []*Node, s int) (*Node, error) {
	for _, v := range cl.Nodes {
		text, err := cl.do(ctx, v, "cluster", "nodes").Text()
		if err != nil {
			return nil, fmt.Errorf("admin: CLUSTER NODES on %s: %w", v.Addr, err)
		}
		nodes, err := parseNodes(text)
		if err != nil {
			return nil, fmt.Errorf("admin: CLUSTER NODES on %s: %w", v.Addr, err)
		}
		for _, n := range nodes {
			if !slices.Contains(n.Slots, s) {
				continue
			}
			for _, m := range masters {
				if m.ID == n.ID {
					return m, nil
				}
			}
		}
	}
	return nil, nil
}
