package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/sentinel"
)

// Status is a deployment as one Sentinel and the nodes report it.
type Status struct {
	// Time is when the status was collected.
	Time time.Time `json:"time"`
	// Sentinel is the Sentinel queried.
	Sentinel string `json:"sentinel"`
	// Sentinels are all the Sentinels it knows, itself included.
	Sentinels []string `json:"sentinels"`
	// Shards are the monitored masters, sorted by name.
	Shards []ShardStatus `json:"shards"`
}

// ShardStatus is one monitored master and its replicas.
type ShardStatus struct {
	Name string `json:"name"`
	// Master is the master's "ip:port" according to the queried Sentinel.
	Master string `json:"master"`
	// State is "ok", "sdown", "odown" or "failover" (in progress),
	// according to the queried Sentinel.
	State string `json:"state"`
	// Role is what the master itself reports ("master", "slave"), or
	// "unreachable".
	Role string `json:"role"`
	// Quorum and ConfigEpoch are the Sentinel's settings for the master.
	Quorum      int   `json:"quorum"`
	ConfigEpoch int64 `json:"config_epoch"`
	// Agree counts the Sentinels that report the same master address, out
	// of SentinelsAsked.
	Agree          int `json:"agree"`
	SentinelsAsked int `json:"sentinels_asked"`
	// Replicas are the replicas known to the Sentinel or connected to the
	// master.
	Replicas []ReplicaStatus `json:"replicas"`
	// LastFailover is the last master switch seen while watching, or, if
	// none, what the config epoch tells (a non-zero epoch means at least
	// one failover happened).
	LastFailover *Failover `json:"last_failover,omitempty"`
}

// ReplicaStatus is one replica of a shard.
type ReplicaStatus struct {
	Addr string `json:"addr"`
	// Link is "up" (streaming from the master), "sync" (initial
	// synchronisation) or "down".
	Link string `json:"link"`
	// Offset is the replica's acknowledged replication offset.
	Offset int64 `json:"offset"`
	// LagBytes is the master's offset minus Offset; LagSeconds the time
	// since the replica's last acknowledgement.
	LagBytes   int64 `json:"lag_bytes"`
	LagSeconds int64 `json:"lag_seconds"`
}

// Failover describes a master switch.
type Failover struct {
	// Time is when it was seen (zero when only the epoch is known).
	Time time.Time `json:"time,omitzero"`
	// From and To are the old and new master addresses, when known.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Epoch is the master's config epoch after the switch.
	Epoch int64 `json:"epoch"`
}

// Collector collects Status from a Sentinel, optionally watching its
// +switch-master events to date failovers. Given several Sentinels, it
// queries the first that answers, so a dead Sentinel does not blind it.
type Collector struct {
	// Sentinels are the "host:port" addresses of the Sentinels to query;
	// the one answering last is tried first.
	Sentinels []string
	// Timeout bounds each request. Default 1s.
	Timeout time.Duration

	mu      sync.Mutex
	cur     int // index in Sentinels of the one that answered last
	clients map[string]*redis.Client
	last    map[string]*Failover
}

// NewCollector returns a collector querying the Sentinels at addrs (at
// least one).
func NewCollector(addrs ...string) *Collector {
	return &Collector{Sentinels: addrs, Timeout: time.Second, clients: map[string]*redis.Client{}, last: map[string]*Failover{}}
}

// current returns the Sentinel to query first.
func (c *Collector) current() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Sentinels[c.cur%len(c.Sentinels)]
}

func (c *Collector) client(addr string) *redis.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.clients[addr]
	if cl == nil {
		cl = redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true,
			DialTimeout: c.Timeout, ReadTimeout: c.Timeout, WriteTimeout: c.Timeout,
			MaxRetries: -1, PoolSize: 2, DialerRetries: 1})
		c.clients[addr] = cl
	}
	return cl
}

// Close closes the collector's connections.
func (c *Collector) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.clients {
		cl.Close()
	}
	c.clients = map[string]*redis.Client{}
}

// Watch records the +switch-master events of the Sentinel until ctx ends,
// reconnecting as needed; onSwitch (optional) is called for each.
func (c *Collector) Watch(ctx context.Context, onSwitch func(name string, f Failover)) {
	for ctx.Err() == nil {
		ps := c.client(c.current()).Subscribe(ctx, "+switch-master")
		ch := ps.Channel(redis.WithChannelHealthCheckInterval(2 * time.Second))
	loop:
		for {
			select {
			case <-ctx.Done():
				break loop
			case m, ok := <-ch:
				if !ok {
					break loop
				}
				sm, err := sentinel.ParseSwitchMaster(m.Payload)
				if err != nil {
					continue
				}
				fo := Failover{Time: time.Now(), From: sm.OldAddr.String(), To: sm.NewAddr.String(), Epoch: -1}
				c.mu.Lock()
				c.last[sm.Name] = &fo
				c.mu.Unlock()
				if onSwitch != nil {
					onSwitch(sm.Name, fo)
				}
			}
		}
		ps.Close()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// pairs turns a flat RESP2 name/value array into a map.
func pairs(v any) map[string]string {
	out := map[string]string{}
	a, _ := v.([]any)
	for i := 0; i+1 < len(a); i += 2 {
		k, _ := a[i].(string)
		val, _ := a[i+1].(string)
		out[k] = val
	}
	return out
}

func pairList(v any) []map[string]string {
	a, _ := v.([]any)
	out := make([]map[string]string, 0, len(a))
	for _, e := range a {
		out = append(out, pairs(e))
	}
	return out
}

func atoi64(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }

func hostPort(m map[string]string) string { return net.JoinHostPort(m["ip"], m["port"]) }

// sentinelState maps Sentinel flags to a short state.
func sentinelState(flags string) string {
	switch {
	case strings.Contains(flags, "failover_in_progress"):
		return "failover"
	case strings.Contains(flags, "o_down"):
		return "odown"
	case strings.Contains(flags, "s_down"):
		return "sdown"
	case strings.Contains(flags, "disconnected"):
		return "down"
	}
	return "ok"
}

// nodeRepl is a node's INFO replication.
type nodeRepl struct {
	role   string
	offset int64
	slaves map[string]ReplicaStatus
}

func (c *Collector) nodeInfo(ctx context.Context, addr string) (*nodeRepl, error) {
	txt, err := c.client(addr).Info(ctx, "replication").Result()
	if err != nil {
		return nil, err
	}
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
			rs := ReplicaStatus{Addr: hostPort(f), Link: link, Offset: atoi64(f["offset"]), LagSeconds: atoi64(f["lag"])}
			nr.slaves[rs.Addr] = rs
		}
	}
	for a, rs := range nr.slaves {
		rs.LagBytes = max(nr.offset-rs.Offset, 0)
		nr.slaves[a] = rs
	}
	return nr, nil
}

// Collect queries a Sentinel, the Sentinels it knows and the masters.
func (c *Collector) Collect(ctx context.Context) (*Status, error) {
	var errs []string
	for range c.Sentinels {
		addr := c.current()
		st, err := c.collect(ctx, addr)
		if err == nil {
			return st, nil
		}
		errs = append(errs, err.Error())
		if ctx.Err() != nil {
			break
		}
		c.mu.Lock()
		c.cur++
		c.mu.Unlock()
	}
	return nil, fmt.Errorf("deploy: no Sentinel answered: %s", strings.Join(errs, "; "))
}

func (c *Collector) collect(ctx context.Context, addr string) (*Status, error) {
	sc := c.client(addr)
	v, err := sc.Do(ctx, "SENTINEL", "MASTERS").Result()
	if err != nil {
		return nil, fmt.Errorf("sentinel %s: %w", addr, err)
	}
	st := &Status{Time: time.Now(), Sentinel: addr}
	sentinels := map[string]bool{addr: true}
	for _, m := range pairList(v) {
		ss := ShardStatus{Name: m["name"], Master: hostPort(m), State: sentinelState(m["flags"]),
			Quorum: int(atoi64(m["quorum"])), ConfigEpoch: atoi64(m["config-epoch"]), Replicas: []ReplicaStatus{}}
		if peers, err := sc.Do(ctx, "SENTINEL", "SENTINELS", ss.Name).Result(); err == nil {
			for _, p := range pairList(peers) {
				sentinels[hostPort(p)] = true
			}
		}
		var known []map[string]string
		if reps, err := sc.Do(ctx, "SENTINEL", "REPLICAS", ss.Name).Result(); err == nil {
			known = pairList(reps)
		}
		ss.Role = "unreachable"
		info, ierr := c.nodeInfo(ctx, ss.Master)
		if ierr == nil {
			ss.Role = info.role
		} else {
			info = &nodeRepl{slaves: map[string]ReplicaStatus{}}
		}
		seen := map[string]bool{}
		for _, r := range known {
			addr := hostPort(r)
			seen[addr] = true
			if rs, ok := info.slaves[addr]; ok {
				ss.Replicas = append(ss.Replicas, rs)
				continue
			}
			// Known to the Sentinel but not streaming from the master.
			rs := ReplicaStatus{Addr: addr, Link: "down", Offset: atoi64(r["slave-repl-offset"]), LagSeconds: -1}
			if ierr == nil && sentinelState(r["flags"]) == "ok" && r["master-link-status"] == "ok" &&
				net.JoinHostPort(r["master-host"], r["master-port"]) == ss.Master {
				rs.Link = "sync"
			}
			rs.LagBytes = max(info.offset-rs.Offset, 0)
			ss.Replicas = append(ss.Replicas, rs)
		}
		for addr, rs := range info.slaves {
			if !seen[addr] {
				ss.Replicas = append(ss.Replicas, rs)
			}
		}
		sort.Slice(ss.Replicas, func(i, j int) bool { return ss.Replicas[i].Addr < ss.Replicas[j].Addr })
		c.mu.Lock()
		// A switch seen while this snapshot was taken may be newer than it.
		if f := c.last[ss.Name]; f != nil && f.To == ss.Master {
			fo := *f
			fo.Epoch = ss.ConfigEpoch
			ss.LastFailover = &fo
		} else if ss.ConfigEpoch > 0 {
			ss.LastFailover = &Failover{Epoch: ss.ConfigEpoch}
		}
		c.mu.Unlock()
		st.Shards = append(st.Shards, ss)
	}
	for a := range sentinels {
		st.Sentinels = append(st.Sentinels, a)
	}
	sort.Strings(st.Sentinels)
	// Agreement: ask every Sentinel where each master is.
	for i := range st.Shards {
		ss := &st.Shards[i]
		ss.SentinelsAsked = len(st.Sentinels)
		for _, a := range st.Sentinels {
			addr, err := c.client(a).Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", ss.Name).StringSlice()
			if err == nil && len(addr) == 2 && net.JoinHostPort(addr[0], addr[1]) == ss.Master {
				ss.Agree++
			}
		}
	}
	sort.Slice(st.Shards, func(i, j int) bool { return shardLess(st.Shards[i].Name, st.Shards[j].Name) })
	return st, nil
}

// shardLess orders "shard-2" before "shard-10".
func shardLess(a, b string) bool {
	ia, ea := strconv.Atoi(a[strings.LastIndexByte(a, '-')+1:])
	ib, eb := strconv.Atoi(b[strings.LastIndexByte(b, '-')+1:])
	if ea == nil && eb == nil && a[:strings.LastIndexByte(a, '-')+1] == b[:strings.LastIndexByte(b, '-')+1] {
		return ia < ib
	}
	return a < b
}

// WriteJSON writes st as indented JSON.
func WriteJSON(w io.Writer, st *Status) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(st)
}

// Column widths of the table; the total stays under 80.
const (
	colShard   = 9
	colMaster  = 20
	colState   = 9
	colReplica = 27
	colAgree   = 6
	// FAILOVER takes the rest ("12s ago", "epoch 3").
)

func cell(s string, w int) string {
	if len(s) >= w {
		if w > 1 {
			s = s[:w-2] + "~"
		}
	}
	return s + strings.Repeat(" ", w-len(s))
}

// HumanBytes renders 0B, 512B, 1.5K, 12M.
func HumanBytes(n int64) string {
	switch {
	case n < 1024:
		return strconv.FormatInt(n, 10) + "B"
	case n < 10*1024:
		return strconv.FormatFloat(float64(n)/1024, 'f', 1, 64) + "K"
	case n < 1024*1024:
		return strconv.FormatInt(n/1024, 10) + "K"
	case n < 10*1024*1024:
		return strconv.FormatFloat(float64(n)/(1024*1024), 'f', 1, 64) + "M"
	case n < 1024*1024*1024:
		return strconv.FormatInt(n/(1024*1024), 10) + "M"
	}
	return strconv.FormatFloat(float64(n)/(1024*1024*1024), 'f', 1, 64) + "G"
}

// ago renders a duration as "5s", "3m", "2h", "4d".
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d.Hours())) + "h"
	}
	return strconv.Itoa(int(d.Hours()/24)) + "d"
}

// WriteTable renders st as a table that fits 80 columns: one line per
// replica, the shard's columns on its first line.
func WriteTable(w io.Writer, st *Status) error {
	var b strings.Builder
	fmt.Fprintf(&b, "shardis: %d shards, %d sentinels (asked %s)  %s\n",
		len(st.Shards), len(st.Sentinels), st.Sentinel, st.Time.Format("15:04:05"))
	b.WriteString(cell("SHARD", colShard) + cell("MASTER", colMaster) + cell("STATE", colState) +
		cell("REPLICAS: LINK LAG", colReplica) + cell("AGREE", colAgree) + "FAILOVER\n")
	for _, s := range st.Shards {
		state := s.State
		if state == "ok" && s.Role != "master" {
			state = s.Role // the Sentinel's master is unreachable or not a master
		}
		fail := "-"
		if f := s.LastFailover; f != nil {
			if !f.Time.IsZero() {
				fail = ago(st.Time.Sub(f.Time)) + " ago"
			} else {
				fail = "epoch " + strconv.FormatInt(f.Epoch, 10)
			}
		}
		agree := fmt.Sprintf("%d/%d", s.Agree, s.SentinelsAsked)
		reps := make([]string, 0, len(s.Replicas))
		for _, r := range s.Replicas {
			txt := r.Addr + " " + r.Link
			if r.Link != "down" {
				txt += " " + HumanBytes(r.LagBytes)
				if r.LagSeconds >= 0 {
					txt += " " + strconv.FormatInt(r.LagSeconds, 10) + "s"
				}
			}
			reps = append(reps, txt)
		}
		if len(reps) == 0 {
			reps = append(reps, "(none)")
		}
		for i, r := range reps {
			if i == 0 {
				b.WriteString(cell(s.Name, colShard) + cell(s.Master, colMaster) + cell(state, colState) +
					cell(r, colReplica) + cell(agree, colAgree) + fail)
			} else {
				b.WriteString(strings.Repeat(" ", colShard+colMaster+colState) + r)
			}
			b.WriteString("\n")
		}
	}
	out := strings.ReplaceAll(b.String(), " \n", "\n")
	for strings.Contains(out, " \n") {
		out = strings.ReplaceAll(out, " \n", "\n")
	}
	_, err := io.WriteString(w, out)
	return err
}
