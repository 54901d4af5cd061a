package admin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
)

// Plan is the layout Create computes before it changes anything.
type Plan struct {
	// Masters are the master addresses with their slot ranges.
	Masters []PlannedMaster `json:"masters"`
}

// PlannedMaster is one master of a Plan.
type PlannedMaster struct {
	// Addr and ID are the master's address and node ID.
	Addr string `json:"addr"`
	ID   string `json:"id"`
	// First and Last bound the master's slot range.
	First int `json:"first_slot"`
	Last  int `json:"last_slot"`
	// Replicas are the addresses of the nodes that will replicate it.
	Replicas []string `json:"replicas"`
}

// PlanCreate checks that every node is an empty cluster node and computes
// the layout "redis-cli --cluster create" would: nodes interleaved by
// host, the first len/(replicas+1) become masters with equal slot ranges,
// the rest replicas, preferring a host other than their master's. At
// least 3 masters are required.
func PlanCreate(ctx context.Context, addrs []string, replicas int, opt *Options) (*Plan, error) {
	opt = opt.defaulted()
	if replicas < 0 {
		return nil, errors.New("admin: replicas must not be negative")
	}
	masters := len(addrs) / (replicas + 1)
	if masters < 3 {
		return nil, fmt.Errorf("admin: a cluster needs at least 3 masters: %d nodes with %d replicas each give %d; at least %d nodes are required",
			len(addrs), replicas, masters, 3*(replicas+1))
	}
	ids := map[string]string{}
	for _, a := range addrs {
		n, all, err := loadNode(ctx, opt, a)
		if err != nil {
			return nil, err
		}
		n.client.Close()
		if len(all) != 1 || len(n.Slots) > 0 {
			return nil, fmt.Errorf("admin: node %s is not empty: it knows other nodes or has slots (CLUSTER RESET it first)", a)
		}
		c := opt.dial(a)
		cctx, cancel := opt.ctx(ctx)
		info, err := c.Info(cctx, "keyspace").Result()
		cancel()
		c.Close()
		if err != nil {
			return nil, fmt.Errorf("admin: INFO on %s: %w", a, err)
		}
		if strings.Contains(info, "keys=") {
			return nil, fmt.Errorf("admin: node %s is not empty: it has keys", a)
		}
		ids[a] = n.ID
	}
	// Interleave by host, as redis-cli does, so masters spread over hosts.
	var hosts []string
	byHost := map[string][]string{}
	for _, a := range addrs {
		h, _, _ := net.SplitHostPort(a)
		if _, ok := byHost[h]; !ok {
			hosts = append(hosts, h)
		}
		byHost[h] = append(byHost[h], a)
	}
	var inter []string
	for len(inter) < len(addrs) {
		for _, h := range hosts {
			if len(byHost[h]) > 0 {
				inter = append(inter, byHost[h][0])
				byHost[h] = byHost[h][1:]
			}
		}
	}
	plan := &Plan{}
	per := float64(SlotCount) / float64(masters)
	first, cursor := 0, 0.0
	for i := range masters {
		last := int(math.Round(cursor + per - 1))
		if last > SlotCount-1 || i == masters-1 {
			last = SlotCount - 1
		}
		last = max(last, first)
		plan.Masters = append(plan.Masters, PlannedMaster{Addr: inter[i], ID: ids[inter[i]], First: first, Last: last})
		first = last + 1
		cursor += per
	}
	// The rest become replicas: each master takes replicas in turn, a node
	// on another host first; left-overs are added one per master.
	pool := inter[masters:]
	if len(pool) > 1 {
		pool = append(pool[1:], pool[0]) // redis-cli rotates the list by one
	}
	take := func(m string) string {
		mh, _, _ := net.SplitHostPort(m)
		for i, a := range pool {
			if h, _, _ := net.SplitHostPort(a); h != mh {
				pool = append(pool[:i:i], pool[i+1:]...)
				return a
			}
		}
		if len(pool) == 0 {
			return ""
		}
		a := pool[0]
		pool = pool[1:]
		return a
	}
	for i := range plan.Masters {
		for range replicas {
			if r := take(plan.Masters[i].Addr); r != "" {
				plan.Masters[i].Replicas = append(plan.Masters[i].Replicas, r)
			}
		}
	}
	for i := 0; len(pool) > 0; i = (i + 1) % len(plan.Masters) {
		plan.Masters[i].Replicas = append(plan.Masters[i].Replicas, take(plan.Masters[i].Addr))
	}
	return plan, nil
}

// Create builds a cluster from empty nodes following plan (from
// PlanCreate): ADDSLOTSRANGE on the masters, a distinct config epoch per
// node, CLUSTER MEET of every node with the first, a wait until all
// nodes agree, CLUSTER REPLICATE on the replicas, and a final wait for
// agreement and for every node to report cluster_state:ok.
func Create(ctx context.Context, plan *Plan, opt *Options) error {
	opt = opt.defaulted()
	var order []string
	for _, m := range plan.Masters {
		order = append(order, m.Addr)
	}
	for _, m := range plan.Masters {
		order = append(order, m.Replicas...)
	}
	cl := &Cluster{opt: opt}
	defer cl.Close()
	for _, a := range order {
		n, _, err := loadNode(ctx, opt, a)
		if err != nil {
			return err
		}
		cl.Nodes = append(cl.Nodes, n)
	}
	step, steps := 0, 4
	opt.logf(">>> Performing hash slots allocation on %d nodes...", len(order))
	for _, m := range plan.Masters {
		if err := cl.must(ctx, cl.ByAddr(m.Addr), "cluster", "addslotsrange", m.First, m.Last); err != nil {
			return err
		}
	}
	step++
	opt.progress("create", step, steps, "slots assigned")
	opt.logf(">>> Assign a different config epoch to each node")
	for i, n := range cl.Nodes {
		// Fails harmlessly on a node that already has an epoch.
		_ = cl.do(ctx, n, "cluster", "set-config-epoch", i+1).Err()
	}
	opt.logf(">>> Sending CLUSTER MEET messages to join the cluster")
	first := cl.Nodes[0]
	host, port := first.hostPort()
	for _, n := range cl.Nodes[1:] {
		args := []interface{}{"cluster", "meet", host, port}
		if first.BusPort != 0 && first.BusPort != port+10000 {
			args = append(args, first.BusPort)
		}
		if err := cl.must(ctx, n, args...); err != nil {
			return err
		}
	}
	step++
	opt.progress("create", step, steps, "nodes met")
	if err := cl.waitJoined(ctx, len(cl.Nodes)); err != nil {
		return err
	}
	for _, m := range plan.Masters {
		for _, r := range m.Replicas {
			opt.logf("Adding replica %s to %s", r, m.Addr)
			if err := cl.must(ctx, cl.ByAddr(r), "cluster", "replicate", m.ID); err != nil {
				return err
			}
		}
	}
	step++
	opt.progress("create", step, steps, "replicas configured")
	if err := cl.waitConsistent(ctx); err != nil {
		return err
	}
	if err := cl.waitState(ctx); err != nil {
		return err
	}
	opt.progress("create", steps, steps, "cluster ready")
	return nil
}

// waitJoined waits until every node knows count nodes and they agree.
func (cl *Cluster) waitJoined(ctx context.Context, count int) error {
	cl.opt.logf(">>> Waiting for the cluster to join")
	want := "cluster_known_nodes:" + strconv.Itoa(count)
	return poll(ctx, cl.opt.WaitTimeout, "the cluster to join", func() (bool, error) {
		for _, n := range cl.Nodes {
			info, err := cl.do(ctx, n, "cluster", "info").Text()
			if err != nil {
				return false, fmt.Errorf("admin: CLUSTER INFO on %s: %w", n.Addr, err)
			}
			if !strings.Contains(info, want+"\r\n") && !strings.HasSuffix(strings.TrimSpace(info), want) {
				return false, nil
			}
		}
		return cl.consistent(ctx)
	})
}

// waitState waits until every node reports cluster_state:ok.
func (cl *Cluster) waitState(ctx context.Context) error {
	return poll(ctx, cl.opt.WaitTimeout, "cluster_state:ok on every node", func() (bool, error) {
		for _, n := range cl.Nodes {
			info, err := cl.do(ctx, n, "cluster", "info").Text()
			if err != nil {
				return false, fmt.Errorf("admin: CLUSTER INFO on %s: %w", n.Addr, err)
			}
			if !strings.Contains(info, "cluster_state:ok") {
				return false, nil
			}
		}
		return true, nil
	})
}
