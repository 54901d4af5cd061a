package admin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shardis/shardis/internal/consistent"
)

// AddNodeOptions says how AddNode joins the new node.
type AddNodeOptions struct {
	// Replica makes the new node a replica; ReplicaOf names its master by
	// ID or unambiguous ID prefix ("" picks the master with the fewest
	// replicas). Default: a master with no slots.
	Replica   bool
	ReplicaOf string
}

// AddNode joins the empty cluster node at newAddr to the cluster of
// existingAddr, as "redis-cli --cluster add-node" does: the cluster is
// checked first, a new master gets the cluster's functions (FUNCTION DUMP
// / RESTORE), the new node MEETs the existing one, and a replica is
// configured with CLUSTER REPLICATE once it has joined. It returns when
// every node, the new one included, reports cluster_state:ok.
func AddNode(ctx context.Context, newAddr, existingAddr string, ao AddNodeOptions, opt *Options) error {
	opt = opt.defaulted()
	cl, err := Load(ctx, existingAddr, opt)
	if err != nil {
		return err
	}
	defer cl.Close()
	r, err := cl.check(ctx, false)
	if err != nil {
		return err
	}
	if !r.OK {
		return fmt.Errorf("%w: %s", errStop, strings.Join(r.Messages, "; "))
	}
	var master *Node
	if ao.Replica || ao.ReplicaOf != "" {
		if ao.ReplicaOf != "" {
			if master, err = cl.ByID(ao.ReplicaOf); err != nil {
				return err
			}
			if !master.IsMaster() {
				return fmt.Errorf("admin: node %s is not a master", master.Addr)
			}
		} else {
			for _, m := range cl.Masters() {
				if master == nil || len(cl.ReplicasOf(m.ID)) < len(cl.ReplicasOf(master.ID)) {
					master = m
				}
			}
			opt.logf("Automatically selected master %s", master.Addr)
		}
	}
	nn, all, err := loadNode(ctx, opt, newAddr)
	if err != nil {
		return err
	}
	cl.Nodes = append(cl.Nodes, nn)
	if len(all) != 1 || len(nn.Slots) > 0 {
		return fmt.Errorf("admin: node %s is not empty: it knows other nodes or has slots", newAddr)
	}
	if n, err := cl.do(ctx, nn, "dbsize").Int64(); err != nil || n > 0 {
		return fmt.Errorf("admin: node %s is not empty (DBSIZE %d, %v)", newAddr, n, err)
	}
	opt.logf(">>> Adding node %s to cluster %s", newAddr, existingAddr)
	if master == nil {
		opt.logf(">>> Getting functions from cluster")
		dump, err := cl.do(ctx, cl.Nodes[0], "function", "dump").Text()
		if err == nil && dump != "" {
			if err := cl.must(ctx, nn, "function", "restore", dump); err != nil {
				return err
			}
		}
	}
	ref := cl.Nodes[0]
	host, port := ref.hostPort()
	args := []interface{}{"cluster", "meet", host, port}
	if ref.BusPort != 0 && ref.BusPort != port+10000 {
		args = append(args, ref.BusPort)
	}
	opt.logf(">>> Send CLUSTER MEET to node %s to make it join the cluster", newAddr)
	if err := cl.must(ctx, nn, args...); err != nil {
		return err
	}
	if err := cl.waitJoined(ctx, len(cl.Nodes)); err != nil {
		return err
	}
	if master != nil {
		opt.logf(">>> Configure node as replica of %s", master.Addr)
		if err := cl.must(ctx, nn, "cluster", "replicate", master.ID); err != nil {
			return err
		}
		if err := cl.waitConsistent(ctx); err != nil {
			return err
		}
	}
	// The new node serves (and accepts MIGRATE) once it knows every slot.
	return cl.waitState(ctx)
}

// DelNode removes the node with id (which must serve no slots) from the
// cluster of addr, as "redis-cli --cluster del-node" does: its replicas
// move to the master with the fewest replicas, every other node FORGETs
// it, and the node gets CLUSTER RESET SOFT.
func DelNode(ctx context.Context, addr, id string, opt *Options) error {
	opt = opt.defaulted()
	cl, err := Load(ctx, addr, opt)
	if err != nil {
		return err
	}
	defer cl.Close()
	node, err := cl.ByID(id)
	if err != nil {
		return err
	}
	if len(node.Slots) > 0 {
		return fmt.Errorf("admin: node %s is not empty: reshard its %d slots away first", node.Addr, len(node.Slots))
	}
	opt.logf(">>> Removing node %s from cluster %s", node.ID, addr)
	for _, n := range cl.Nodes {
		if n == node {
			continue
		}
		if n.ReplicaOf == node.ID {
			var m *Node
			for _, c := range cl.Masters() {
				if c != node && (m == nil || len(cl.ReplicasOf(c.ID)) < len(cl.ReplicasOf(m.ID))) {
					m = c
				}
			}
			if m == nil {
				return errors.New("admin: no other master for the removed node's replicas")
			}
			opt.logf(">>> %s as replica of %s", n.Addr, m.Addr)
			if err := cl.must(ctx, n, "cluster", "replicate", m.ID); err != nil {
				return err
			}
		}
		if err := cl.must(ctx, n, "cluster", "forget", node.ID); err != nil {
			return err
		}
	}
	opt.logf(">>> Sending CLUSTER RESET SOFT to the deleted node.")
	return cl.must(ctx, node, "cluster", "reset", "soft")
}

// move is one slot of a reshard table.
type move struct {
	slot int
	src  *Node
}

// reshardTable picks numSlots slots from sources in proportion to their
// slot counts (the largest source rounded up, the others down), lowest
// slots first, as clusterManagerComputeReshardTable does, topped up to
// numSlots when rounding leaves it short.
func reshardTable(sources []*Node, numSlots int) []move {
	sorted := slices.Clone(sources)
	sort.SliceStable(sorted, func(i, j int) bool { return len(sorted[i].Slots) > len(sorted[j].Slots) })
	total := 0
	for _, n := range sorted {
		total += len(n.Slots)
	}
	var out []move
	for i, n := range sorted {
		if total == 0 {
			break
		}
		share := float64(numSlots) / float64(total) * float64(len(n.Slots))
		if i == 0 {
			share = math.Ceil(share)
		} else {
			share = math.Floor(share)
		}
		for c, s := range n.Slots {
			if c >= int(share) || len(out) >= numSlots {
				break
			}
			out = append(out, move{slot: s, src: n})
		}
	}
	// Rounding down can leave the table short (redis-cli then moves fewer
	// slots than asked); top it up from the sources in the same order.
	taken := map[int]bool{}
	for _, m := range out {
		taken[m.slot] = true
	}
	for _, n := range sorted {
		for _, s := range n.Slots {
			if len(out) >= numSlots {
				return out
			}
			if !taken[s] {
				taken[s] = true
				out = append(out, move{slot: s, src: n})
			}
		}
	}
	return out
}

// ReshardOptions says what Reshard moves.
type ReshardOptions struct {
	// From are the source masters' IDs (or prefixes); "all" (or none)
	// means every master but the target.
	From []string
	// To is the target master's ID (or prefix).
	To string
	// Slots is how many slots to move.
	Slots int
}

// Reshard moves ro.Slots slots to ro.To from the sources, one slot at a
// time with all their keys, as "redis-cli --cluster reshard" does. The
// cluster must pass a check first. Progress counts slots moved.
func Reshard(ctx context.Context, addr string, ro ReshardOptions, opt *Options) error {
	opt = opt.defaulted()
	cl, err := Load(ctx, addr, opt)
	if err != nil {
		return err
	}
	defer cl.Close()
	r, err := cl.check(ctx, false)
	if err != nil {
		return err
	}
	if !r.OK {
		return fmt.Errorf("%w: %s", errStop, strings.Join(r.Messages, "; "))
	}
	if ro.Slots <= 0 || ro.Slots > SlotCount {
		return fmt.Errorf("admin: number of slots %d out of range", ro.Slots)
	}
	dst, err := cl.ByID(ro.To)
	if err != nil {
		return err
	}
	if !dst.IsMaster() {
		return fmt.Errorf("admin: the target %s is not a master", dst.Addr)
	}
	var sources []*Node
	if len(ro.From) == 0 || (len(ro.From) == 1 && ro.From[0] == "all") {
		for _, m := range cl.Masters() {
			if m != dst && len(m.Slots) > 0 {
				sources = append(sources, m)
			}
		}
	} else {
		for _, id := range ro.From {
			n, err := cl.ByID(id)
			if err != nil {
				return err
			}
			if !n.IsMaster() {
				return fmt.Errorf("admin: the source %s is not a master", n.Addr)
			}
			if n == dst {
				return errors.New("admin: the target is also a source")
			}
			sources = append(sources, n)
		}
	}
	table := reshardTable(sources, ro.Slots)
	if len(table) < ro.Slots {
		return fmt.Errorf("admin: the sources have only %d slots to give", len(table))
	}
	return cl.runMoves(ctx, "reshard", table, dst, 0, len(table))
}

// runMoves moves the table's slots to dst, reporting progress. With a
// RangeMover the consecutive entries of one source (up to rangeBatch
// slots) move in one call.
func (cl *Cluster) runMoves(ctx context.Context, op string, table []move, dst *Node, done, total int) error {
	for i := 0; i < len(table); {
		if err := ctx.Err(); err != nil {
			return err
		}
		m := table[i]
		if rm, ok := cl.mover(ctx, m.src, dst).(RangeMover); ok {
			j := i + 1
			for j < len(table) && j-i < rangeBatch && table[j].src == m.src {
				j++
			}
			slots := make([]int, 0, j-i)
			for _, e := range table[i:j] {
				slots = append(slots, e.slot)
			}
			slices.Sort(slots)
			cl.opt.logf("Moving %d slots (%d-%d) from %s to %s with whole-slot migration", len(slots), slots[0], slots[len(slots)-1], m.src.Addr, dst.Addr)
			if err := rm.MoveSlots(ctx, cl, slots, m.src, dst); err != nil {
				return err
			}
			for _, s := range slots {
				m.src.Slots = removeSlot(m.src.Slots, s)
				dst.Slots = insertSlot(dst.Slots, s)
			}
			cl.opt.progress(op, done+j, total, fmt.Sprintf("slots %d-%d %s -> %s (whole-slot migration)", slots[0], slots[len(slots)-1], m.src.Addr, dst.Addr))
			i = j
			continue
		}
		cl.opt.logf("Moving slot %d from %s to %s", m.slot, m.src.Addr, dst.Addr)
		if err := cl.moveSlot(ctx, m.slot, m.src, dst); err != nil {
			return err
		}
		i++
		cl.opt.progress(op, done+i, total, fmt.Sprintf("slot %d %s -> %s", m.slot, m.src.Addr, dst.Addr))
	}
	return nil
}

// rangeBatch bounds the slots of one whole-slot migration task, so that
// progress advances and a failure rolls back a bounded part.
const rangeBatch = 1024

// RebalanceOptions tune Rebalance.
type RebalanceOptions struct {
	// Weights maps master IDs (or prefixes) to weights. Default 1 each.
	Weights map[string]float64
	// UseEmptyMasters gives slots to masters that have none. Default
	// false: they are left out.
	UseEmptyMasters bool
	// Threshold is the percentage a master's slot count may differ from
	// its share before a rebalance is needed. Default 2; -1 always
	// rebalances.
	Threshold float64
	// Simulate computes the moves without doing them.
	Simulate bool
}

// Rebalance spreads slots over the masters in proportion to their
// weights, as "redis-cli --cluster rebalance" does: nothing happens when
// every master is within Threshold percent of its share; otherwise slots
// move from the most over-served masters to the most under-served.
// It returns the number of slots moved (or to move, with Simulate).
func Rebalance(ctx context.Context, addr string, ro RebalanceOptions, opt *Options) (int, error) {
	opt = opt.defaulted()
	cl, err := Load(ctx, addr, opt)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	weight := map[*Node]float64{}
	for _, m := range cl.Masters() {
		weight[m] = 1
	}
	for id, w := range ro.Weights {
		n, err := cl.ByID(id)
		if err != nil || !n.IsMaster() {
			return 0, fmt.Errorf("admin: no such master node %s", id)
		}
		weight[n] = w
	}
	threshold := ro.Threshold
	if threshold == 0 {
		threshold = 2
	}
	var involved []*Node
	total := 0.0
	for _, m := range cl.Masters() {
		if !ro.UseEmptyMasters && len(m.Slots) == 0 {
			continue
		}
		total += weight[m]
		involved = append(involved, m)
	}
	r, err := cl.check(ctx, false)
	if err != nil {
		return 0, err
	}
	if !r.OK {
		return 0, fmt.Errorf("%w: %s", errStop, strings.Join(r.Messages, "; "))
	}
	if total <= 0 {
		return 0, errors.New("admin: total weight is zero")
	}
	balance := map[*Node]int{}
	need, totalBalance := false, 0
	for _, n := range involved {
		expected := int(float64(SlotCount) / total * weight[n])
		balance[n] = len(n.Slots) - expected
		totalBalance += balance[n]
		if threshold > 0 {
			if len(n.Slots) > 0 {
				if math.Abs(100-100*float64(expected)/float64(len(n.Slots))) > threshold {
					need = true
				}
			} else if expected > 1 {
				need = true
			}
		} else {
			need = true
		}
	}
	if !need {
		opt.logf("*** No rebalancing needed! All nodes are within the %.2f%% threshold.", threshold)
		return 0, nil
	}
	// Rounding leaves slots unassigned; give them to the under-served.
	for totalBalance > 0 {
		for _, n := range involved {
			if balance[n] <= 0 && totalBalance > 0 {
				balance[n]--
				totalBalance--
			}
		}
	}
	sort.SliceStable(involved, func(i, j int) bool { return balance[involved[i]] < balance[involved[j]] })
	opt.logf(">>> Rebalancing across %d nodes. Total weight = %.2f", len(involved), total)
	type step struct {
		src, dst *Node
		n        int
	}
	var steps []step
	sum := 0
	for d, s := 0, len(involved)-1; d < s; {
		dst, src := involved[d], involved[s]
		n := min(-balance[dst], balance[src])
		if n < 0 {
			n = 0
		}
		if n > 0 {
			steps = append(steps, step{src, dst, n})
			sum += n
		}
		balance[dst] += n
		balance[src] -= n
		if balance[dst] >= 0 {
			d++
		}
		if balance[src] <= 0 {
			s--
		}
	}
	if ro.Simulate {
		return sum, nil
	}
	done := 0
	for _, st := range steps {
		opt.logf("Moving %d slots from %s to %s", st.n, st.src.Addr, st.dst.Addr)
		table := reshardTable([]*Node{st.src}, st.n)
		if len(table) != st.n {
			return done, fmt.Errorf("admin: reshard table has %d slots, want %d", len(table), st.n)
		}
		if err := cl.runMoves(ctx, "rebalance", table, st.dst, done, sum); err != nil {
			return done, err
		}
		done += st.n
	}
	return done, nil
}

// FailoverMode selects how Failover promotes a replica.
type FailoverMode int

const (
	// FailoverDefault is CLUSTER FAILOVER: the master is asked to stop
	// writes and hand over once the replica has caught up.
	FailoverDefault FailoverMode = iota
	// FailoverForce is CLUSTER FAILOVER FORCE: no handshake with the
	// master (for a master that is down), but an election still.
	FailoverForce
	// FailoverTakeover is CLUSTER FAILOVER TAKEOVER: no handshake and no
	// election; the replica bumps the epoch alone.
	FailoverTakeover
)

// manualFailoverTimeout is Redis's CLUSTER_MF_TIMEOUT: how long a node
// pursues a manual failover before it gives up.
const manualFailoverTimeout = 5 * time.Second

// Failover promotes the replica at addr to master of its master's slots
// with CLUSTER FAILOVER (FORCE or TAKEOVER per mode) and waits until it
// reports role master and the nodes agree.
func Failover(ctx context.Context, addr string, mode FailoverMode, opt *Options) error {
	opt = opt.defaulted()
	cl, err := Load(ctx, addr, opt)
	if err != nil {
		return err
	}
	defer cl.Close()
	n := cl.Nodes[0]
	if n.IsMaster() {
		return fmt.Errorf("admin: %s is already a master; run failover on one of its replicas", addr)
	}
	args := []interface{}{"cluster", "failover"}
	switch mode {
	case FailoverForce:
		args = append(args, "force")
	case FailoverTakeover:
		args = append(args, "takeover")
	}
	opt.logf(">>> Failing over %s (replica of %s)", addr, n.ReplicaOf)
	if err := cl.must(ctx, n, args...); err != nil {
		return err
	}
	opt.progress("failover", 1, 2, "failover requested")
	// A manual failover the replica could not finish within Redis's
	// manual-failover timeout (CLUSTER_MF_TIMEOUT, 5 s: the master's
	// paused offset or the votes came too late) is abandoned by the
	// node, which stays a replica; the request is then made again, until
	// WaitTimeout.
	// After a failed election the replica may try again only once the
	// election's retry time (a multiple of cluster-node-timeout) passed,
	// so the wait covers five node timeouts when that is longer.
	wait := opt.WaitTimeout
	if v, err := cl.do(ctx, n, "config", "get", "cluster-node-timeout").StringSlice(); err == nil && len(v) == 2 {
		if ms, err := strconv.ParseInt(v[1], 10, 64); err == nil && ms > 0 {
			wait = max(wait, 5*time.Duration(ms)*time.Millisecond)
		}
	}
	asked := time.Now()
	err = poll(ctx, wait, addr+" to become master", func() (bool, error) {
		role, err := cl.do(ctx, n, "role").Slice()
		if err != nil {
			return false, nil
		}
		if len(role) > 0 && role[0] == "master" {
			return true, nil
		}
		if time.Since(asked) > manualFailoverTimeout+time.Second {
			opt.logf(">>> %s is still a replica after the manual failover's timeout: asking again", addr)
			if err := cl.must(ctx, n, args...); err != nil {
				return false, err
			}
			asked = time.Now()
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	// The old master may be down; agreement is among the reachable.
	if err := cl.waitConsistent(ctx); err != nil {
		return err
	}
	opt.progress("failover", 2, 2, addr+" is master")
	return nil
}

// MasterInfo is one master in Info's summary.
type MasterInfo struct {
	// Addr and ID are the master's address and node ID.
	Addr string `json:"addr"`
	ID   string `json:"id"`
	// Keys is the master's DBSIZE.
	Keys int64 `json:"keys"`
	// Slots counts its slots; Ranges lists them ("0-5460,5462").
	Slots  int    `json:"slots"`
	Ranges string `json:"ranges"`
	// Replicas counts its reachable replicas.
	Replicas int `json:"replicas"`
	// Epoch is its config epoch.
	Epoch int64 `json:"config_epoch"`
}

// ClusterInfo is Info's summary, as "redis-cli --cluster info" prints it.
type ClusterInfo struct {
	// Masters are the reachable masters.
	Masters []MasterInfo `json:"masters"`
	// Keys is the sum of the masters' keys.
	Keys int64 `json:"keys"`
	// Unreachable are known nodes that did not answer.
	Unreachable []string `json:"unreachable,omitempty"`
}

// Info summarises the cluster of addr: per master its keys (DBSIZE),
// slots and replicas.
func Info(ctx context.Context, addr string, opt *Options) (*ClusterInfo, error) {
	cl, err := Load(ctx, addr, opt)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	out := &ClusterInfo{Unreachable: cl.Unreachable}
	for _, m := range cl.Masters() {
		keys, err := cl.do(ctx, m, "dbsize").Int64()
		if err != nil {
			return nil, fmt.Errorf("admin: DBSIZE on %s: %w", m.Addr, err)
		}
		out.Keys += keys
		out.Masters = append(out.Masters, MasterInfo{Addr: m.Addr, ID: m.ID, Keys: keys, Slots: len(m.Slots),
			Ranges: consistent.SlotRanges(m.Slots), Replicas: len(cl.ReplicasOf(m.ID)), Epoch: m.ConfigEpoch})
	}
	return out, nil
}
