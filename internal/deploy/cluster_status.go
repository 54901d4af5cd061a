package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClusterStatus is a cluster deployment as its nodes report it.
type ClusterStatus struct {
	// Mode is ModeCluster, so scripts can tell the two status shapes apart.
	Mode string `json:"mode"`
	// Time is when the status was collected.
	Time time.Time `json:"time"`
	// Entry is the node whose CLUSTER NODES view is shown (the first that
	// answered).
	Entry string `json:"entry"`
	// State is the entry node's cluster_state ("ok" or "fail").
	State string `json:"state"`
	// KnownNodes is the number of nodes in the entry's view.
	KnownNodes int `json:"known_nodes"`
	// Agree counts the nodes whose slot map (which master serves which
	// slots) equals the entry's, out of Asked (the nodes that answered);
	// Unreachable lists the nodes that did not.
	Agree       int      `json:"agree"`
	Asked       int      `json:"asked"`
	Unreachable []string `json:"unreachable,omitempty"`
	// Masters are the masters serving slots, in slot order.
	Masters []ClusterMasterStatus `json:"masters"`
	// LastFailover is the most recent change of master for a slot range:
	// seen while watching (dated), or else inferred from deploy.json (the
	// range's master at creation is no longer its master; undated).
	LastFailover *ClusterFailover `json:"last_failover,omitempty"`
}

// ClusterMasterStatus is one master and its replicas.
type ClusterMasterStatus struct {
	// ID and Addr are the master's node id and "host:port".
	ID   string `json:"id"`
	Addr string `json:"addr"`
	// ConfigEpoch is the master's config epoch.
	ConfigEpoch int64 `json:"config_epoch"`
	// State is the cluster_state the master itself reports, or
	// "unreachable"; Flags are the entry's flags for it ("master",
	// "master,fail" ...).
	State string `json:"state"`
	Flags string `json:"flags"`
	// Slots is the number of slots it serves; Ranges lists them
	// ("0-5460" or "0-99,200-300").
	Slots  int    `json:"slots"`
	Ranges string `json:"ranges"`
	// Replicas are the nodes replicating it.
	Replicas []ClusterReplicaStatus `json:"replicas"`
}

// ClusterReplicaStatus is one replica of a cluster master.
type ClusterReplicaStatus struct {
	// ID and Addr are the replica's node id and "host:port".
	ID   string `json:"id"`
	Addr string `json:"addr"`
	// Link is "up" (the replica's master_link_status), "sync" (the master
	// lists it but it is not streaming yet), "down", or "unreachable".
	Link string `json:"link"`
	// Offset is the replica's acknowledged replication offset; LagBytes
	// the master's offset minus it; LagSeconds the time since the
	// replica's last acknowledgement (-1 when unknown).
	Offset     int64 `json:"offset"`
	LagBytes   int64 `json:"lag_bytes"`
	LagSeconds int64 `json:"lag_seconds"`
}

// ClusterFailover is a change of master for a slot range.
type ClusterFailover struct {
	// Time is when it was seen (zero when inferred from deploy.json).
	Time time.Time `json:"time,omitzero"`
	// Ranges are the slots that changed master.
	Ranges string `json:"ranges"`
	// From and To are the old and new masters' addresses.
	From string `json:"from"`
	To   string `json:"to"`
	// Epoch is the new master's config epoch.
	Epoch int64 `json:"epoch"`
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, addr, flags, master, link string
	epoch                         int64
	ranges                        []string // "0-5460", "7000"; open slots ("[...]") left out
	slotCount                     int
}

func (n *clusterNode) replica() bool { return hasFlag(n.flags, "slave") }

func hasFlag(flags, f string) bool {
	for _, x := range strings.Split(flags, ",") {
		if x == f {
			return true
		}
	}
	return false
}

// parseClusterNodes parses a CLUSTER NODES reply; malformed lines are
// skipped.
func parseClusterNodes(text string) []*clusterNode {
	var out []*clusterNode
	for _, line := range strings.Split(text, "\n") {
		w := strings.Fields(line)
		if len(w) < 8 {
			continue
		}
		addr := w[1]
		if i := strings.IndexAny(addr, "@,"); i >= 0 {
			addr = addr[:i]
		}
		n := &clusterNode{id: w[0], addr: addr, flags: w[2], master: w[3], link: w[7]}
		n.epoch, _ = strconv.ParseInt(w[6], 10, 64)
		for _, r := range w[8:] {
			if strings.HasPrefix(r, "[") {
				continue
			}
			lo, hi, isRange := strings.Cut(r, "-")
			a, err1 := strconv.Atoi(lo)
			b := a
			var err2 error
			if isRange {
				b, err2 = strconv.Atoi(hi)
			}
			if err1 != nil || err2 != nil || b < a {
				continue
			}
			n.ranges = append(n.ranges, r)
			n.slotCount += b - a + 1
		}
		out = append(out, n)
	}
	return out
}

func myself(nodes []*clusterNode) *clusterNode {
	for _, n := range nodes {
		if hasFlag(n.flags, "myself") {
			return n
		}
	}
	return nil
}

// slotSignature renders which node id serves which slots, independent of
// line order and of any node's point of view.
func slotSignature(nodes []*clusterNode) string {
	var parts []string
	for _, n := range nodes {
		if len(n.ranges) > 0 {
			parts = append(parts, n.id+"="+strings.Join(n.ranges, ","))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// topologySignature is slotSignature plus which master each replica
// follows: two nodes with the same one agree on the whole shape.
func topologySignature(nodes []*clusterNode) string {
	var parts []string
	for _, n := range nodes {
		if n.replica() {
			parts = append(parts, n.id+">"+n.master)
		}
	}
	sort.Strings(parts)
	return slotSignature(nodes) + " " + strings.Join(parts, " ")
}

// firstSlot is the first slot of a ranges list, for ordering.
func firstSlot(ranges []string) int {
	if len(ranges) == 0 {
		return 1 << 20
	}
	lo, _, _ := strings.Cut(ranges[0], "-")
	n, _ := strconv.Atoi(lo)
	return n
}

// ClusterCollector collects ClusterStatus from the nodes of a cluster and
// remembers the slot map between collections, to date changes of master.
type ClusterCollector struct {
	// Addrs are the nodes asked, in order; the first that answers is the
	// entry node.
	Addrs []string
	// Timeout bounds each request. Default 1s.
	Timeout time.Duration
	// Initial, when set, maps a slot range's first slot to the addresses
	// of its shard at creation, its master first; a range now served by
	// another node of the same shard (and no watched change known) is
	// reported as an undated LastFailover.
	Initial map[int][]string

	mu      sync.Mutex
	clients map[string]*redis.Client
	prev    []*clusterNode   // the entry's view at the last collection
	last    *ClusterFailover // the last failover seen between two collections
}

// NewClusterCollector returns a collector asking the nodes at addrs.
func NewClusterCollector(addrs ...string) *ClusterCollector {
	return &ClusterCollector{Addrs: addrs, Timeout: time.Second, clients: map[string]*redis.Client{}}
}

// NewLayoutCollector returns a collector for a cluster deployment's
// nodes, which knows each shard's master at creation.
func NewLayoutCollector(l *Layout) *ClusterCollector {
	c := NewClusterCollector(l.NodeAddrs()...)
	c.Initial = map[int][]string{}
	n := len(l.Shards)
	for i, s := range l.Shards {
		// The ranges admin.Create assigns: equal shares in shard order.
		for _, p := range s.Ports {
			c.Initial[createFirstSlot(i, n)] = append(c.Initial[createFirstSlot(i, n)], l.Addr(p))
		}
	}
	return c
}

// createFirstSlot is the first slot of master i of n in the layout
// admin.PlanCreate computes (and redis-cli --cluster create).
func createFirstSlot(i, n int) int {
	if i == 0 {
		return 0
	}
	per := 16384.0 / float64(n)
	cursor := per * float64(i-1)
	return int(math.Round(cursor+per-1)) + 1
}

func (c *ClusterCollector) client(addr string) *redis.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.clients[addr]
	if cl == nil {
		cl = nodeClient(addr, c.Timeout)
		c.clients[addr] = cl
	}
	return cl
}

// Close closes the collector's connections.
func (c *ClusterCollector) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.clients {
		cl.Close()
	}
	c.clients = map[string]*redis.Client{}
}

// Collect asks every node for its CLUSTER NODES and CLUSTER INFO, and
// the masters and replicas for INFO replication. It fails only when no
// node answers.
func (c *ClusterCollector) Collect(ctx context.Context) (*ClusterStatus, error) {
	st := &ClusterStatus{Mode: ModeCluster, Time: time.Now()}
	views := map[string][]*clusterNode{}
	states := map[string]string{}
	var entry []*clusterNode
	var errs []string
	asked := map[string]bool{}
	ask := func(addr string) {
		asked[addr] = true
		text, err := c.client(addr).ClusterNodes(ctx).Result()
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", addr, err))
			st.Unreachable = append(st.Unreachable, addr)
			return
		}
		nodes := parseClusterNodes(text)
		views[addr] = nodes
		if info, err := c.client(addr).ClusterInfo(ctx).Result(); err == nil {
			states[addr] = infoFields(info)["cluster_state"]
		}
		if entry == nil {
			entry, st.Entry = nodes, addr
		}
	}
	for _, a := range c.Addrs {
		ask(a)
	}
	if entry == nil {
		return nil, fmt.Errorf("deploy: no cluster node answered: %s", strings.Join(errs, "; "))
	}
	// Nodes of the entry's view not among Addrs are asked too.
	for _, n := range entry {
		if !asked[n.addr] && !hasFlag(n.flags, "noaddr") {
			ask(n.addr)
		}
	}
	sort.Strings(st.Unreachable)
	st.State, st.KnownNodes, st.Asked = states[st.Entry], len(entry), len(views)
	ref := slotSignature(entry)
	for _, v := range views {
		if slotSignature(v) == ref {
			st.Agree++
		}
	}
	byID := map[string]*clusterNode{}
	for _, n := range entry {
		byID[n.id] = n
	}
	var masters []*clusterNode
	for _, n := range entry {
		if !n.replica() && len(n.ranges) > 0 {
			masters = append(masters, n)
		}
	}
	sort.Slice(masters, func(i, j int) bool { return firstSlot(masters[i].ranges) < firstSlot(masters[j].ranges) })
	for _, m := range masters {
		ms := ClusterMasterStatus{ID: m.id, Addr: m.addr, ConfigEpoch: m.epoch, Flags: strings.ReplaceAll(m.flags, "myself,", ""),
			Slots: m.slotCount, Ranges: strings.Join(m.ranges, ","), Replicas: []ClusterReplicaStatus{}}
		ms.State = states[m.addr]
		if _, ok := views[m.addr]; !ok {
			ms.State = "unreachable"
		}
		var mrepl *nodeRepl
		if ms.State != "unreachable" {
			if txt, err := c.client(m.addr).Info(ctx, "replication").Result(); err == nil {
				mrepl = parseRepl(txt)
			}
		}
		for _, n := range entry {
			if !n.replica() || n.master != m.id {
				continue
			}
			rs := ClusterReplicaStatus{ID: n.id, Addr: n.addr, Link: "down", LagSeconds: -1}
			if mrepl != nil {
				if s, ok := mrepl.slaves[n.addr]; ok {
					rs.Link, rs.Offset, rs.LagBytes, rs.LagSeconds = s.Link, s.Offset, s.LagBytes, s.LagSeconds
				}
			}
			if txt, err := c.client(n.addr).Info(ctx, "replication").Result(); err != nil {
				rs.Link = "unreachable"
			} else if infoFields(txt)["master_link_status"] != "up" {
				rs.Link = "down"
			} else if rs.Link == "down" {
				rs.Link = "up" // streaming, though the master did not list it (yet)
			}
			ms.Replicas = append(ms.Replicas, rs)
		}
		sort.Slice(ms.Replicas, func(i, j int) bool { return ms.Replicas[i].Addr < ms.Replicas[j].Addr })
		st.Masters = append(st.Masters, ms)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	// A change of master for a range seen since the last collection.
	if f := failoverBetween(c.prev, entry, st.Time); f != nil {
		c.last = f
	}
	c.prev = entry
	if c.last != nil {
		f := *c.last
		st.LastFailover = &f
	} else {
		// Undated: a range whose master is not the one it had at creation.
		var best *ClusterFailover
		for _, m := range masters {
			for _, r := range m.ranges {
				lo, _, _ := strings.Cut(r, "-")
				s, _ := strconv.Atoi(lo)
				shard := c.Initial[s]
				if len(shard) > 1 && shard[0] != m.addr && slices.Contains(shard, m.addr) && (best == nil || m.epoch > best.Epoch) {
					best = &ClusterFailover{Ranges: r, From: shard[0], To: m.addr, Epoch: m.epoch}
				}
			}
		}
		st.LastFailover = best
	}
	return st, nil
}

// failoverBetween finds a failover between two views of the cluster: slots
// whose master changed to a node that was a replica of their old master,
// or away from a master that is now failed or a replica (a reshard, which
// moves slots between healthy masters, is not a failover). It returns nil
// when there is none; several ranges taken over by the same node are
// joined.
func failoverBetween(prev, now []*clusterNode, at time.Time) *ClusterFailover {
	if prev == nil {
		return nil
	}
	prevByID := map[string]*clusterNode{}
	for _, n := range prev {
		prevByID[n.id] = n
	}
	nowByID := map[string]*clusterNode{}
	for _, n := range now {
		nowByID[n.id] = n
	}
	// owner[first slot of a range] = id, in the previous view.
	owner := map[int]string{}
	for _, n := range prev {
		if n.replica() {
			continue
		}
		for _, r := range n.ranges {
			lo, hi, _ := strings.Cut(r, "-")
			a, _ := strconv.Atoi(lo)
			b := a
			if hi != "" {
				b, _ = strconv.Atoi(hi)
			}
			for s := a; s <= b; s++ {
				owner[s] = n.id
			}
		}
	}
	var f *ClusterFailover
	for _, n := range now {
		if n.replica() {
			continue
		}
		for _, r := range n.ranges {
			lo, _, _ := strings.Cut(r, "-")
			s, _ := strconv.Atoi(lo)
			old, ok := owner[s]
			if !ok || old == n.id {
				continue
			}
			was := prevByID[n.id]
			oldNow := nowByID[old]
			promoted := was != nil && was.replica() && was.master == old
			oldGone := oldNow == nil || oldNow.replica() || hasFlag(oldNow.flags, "fail") || hasFlag(oldNow.flags, "fail?")
			if !promoted && !oldGone {
				continue
			}
			from := old
			if o := prevByID[old]; o != nil {
				from = o.addr
			}
			if f != nil && f.To == n.addr {
				f.Ranges += "," + r
				continue
			}
			f = &ClusterFailover{Time: at, Ranges: r, From: from, To: n.addr, Epoch: n.epoch}
		}
	}
	return f
}

// parseRepl parses INFO replication: the role, the master offset and the
// replicas the master lists.
func parseRepl(txt string) *nodeRepl {
	nr := &nodeRepl{slaves: map[string]ReplicaStatus{}}
	for _, line := range strings.Split(txt, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch {
		case k == "role":
			nr.role = v
		case k == "master_repl_offset":
			nr.offset = atoi64(v)
		case strings.HasPrefix(k, "slave") && strings.Contains(v, "ip="):
			f := map[string]string{}
			for _, kv := range strings.Split(v, ",") {
				a, b, _ := strings.Cut(kv, "=")
				f[a] = b
			}
			link := "sync"
			if f["state"] == "online" {
				link = "up"
			}
			rs := ReplicaStatus{Addr: net.JoinHostPort(f["ip"], f["port"]), Link: link, Offset: atoi64(f["offset"]), LagSeconds: atoi64(f["lag"])}
			nr.slaves[rs.Addr] = rs
		}
	}
	for a, rs := range nr.slaves {
		rs.LagBytes = max(nr.offset-rs.Offset, 0)
		nr.slaves[a] = rs
	}
	return nr
}

// WriteClusterJSON writes st as indented JSON.
func WriteClusterJSON(w io.Writer, st *ClusterStatus) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(st)
}

// WriteClusterTable renders st in 80 columns: a line per master (address,
// node id, config epoch, the state it reports, slot count and ranges), a
// line per replica (address, id, link, lag), and the last failover.
func WriteClusterTable(w io.Writer, st *ClusterStatus) error {
	var b strings.Builder
	fmt.Fprintf(&b, "shardis cluster: %d masters, %d nodes, cluster_state %s, %d/%d agree  %s\n",
		len(st.Masters), st.KnownNodes, st.State, st.Agree, st.Asked, st.Time.Format("15:04:05"))
	if len(st.Unreachable) > 0 {
		fmt.Fprintf(&b, "unreachable: %s\n", strings.Join(st.Unreachable, " "))
	}
	b.WriteString(cell("MASTER / REPLICA", 22) + cell("ID", 10) + cell("EPOCH", 6) + cell("STATE", 12) + "SLOTS\n")
	short := func(id string) string {
		if len(id) > 8 {
			return id[:8]
		}
		return id
	}
	for _, m := range st.Masters {
		state := m.State
		if hasFlag(m.Flags, "fail") || hasFlag(m.Flags, "fail?") {
			state = strings.TrimPrefix(m.Flags, "master,")
		}
		ranges := m.Ranges
		if room := 79 - 50 - len(strconv.Itoa(m.Slots)) - 1; len(ranges) > room {
			ranges = ranges[:room-1] + "~"
		}
		b.WriteString(cell(m.Addr, 22) + cell(short(m.ID), 10) + cell(strconv.FormatInt(m.ConfigEpoch, 10), 6) +
			cell(state, 12) + strconv.Itoa(m.Slots) + " " + ranges + "\n")
		for _, r := range m.Replicas {
			txt := r.Link
			if r.Link == "up" || r.Link == "sync" {
				txt += " lag " + HumanBytes(r.LagBytes)
				if r.LagSeconds >= 0 {
					txt += " " + strconv.FormatInt(r.LagSeconds, 10) + "s"
				}
			}
			b.WriteString(cell("  "+r.Addr, 22) + cell(short(r.ID), 10) + cell("", 6) + txt + "\n")
		}
		if len(m.Replicas) == 0 {
			b.WriteString("  (no replica)\n")
		}
	}
	fail := "-\n"
	if f := st.LastFailover; f != nil {
		when := ""
		if !f.Time.IsZero() {
			when = ago(st.Time.Sub(f.Time)) + " ago (" + f.Time.Format("15:04:05") + ") "
		}
		ranges := "slots " + f.Ranges
		if len(ranges) > 77 {
			ranges = ranges[:76] + "~"
		}
		fail = fmt.Sprintf("%s%s -> %s, epoch %d\n  %s\n", when, f.From, f.To, f.Epoch, ranges)
	}
	fmt.Fprintf(&b, "last failover: %s", fail)
	out := b.String()
	for strings.Contains(out, " \n") {
		out = strings.ReplaceAll(out, " \n", "\n")
	}
	_, err := io.WriteString(w, out)
	return err
}
