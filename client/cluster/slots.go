package cluster

import (
	"slices"
	"sync"

	"github.com/redis/go-redis/v9"
)

// SlotCount is the number of hash slots of a Redis cluster.
const SlotCount = 16384

// Shard is one master and its replicas, as the slot map knows them.
type Shard struct {
	// Master is the master's "host:port".
	Master string
	// Replicas are the replicas' "host:port" addresses.
	Replicas []string
}

// slotTable is an immutable slot map: owner[s] indexes shards, -1 when the
// slot is not served. A change builds a new table.
type slotTable struct {
	owner  [SlotCount]int32
	shards []Shard
}

func emptyTable() *slotTable {
	t := &slotTable{}
	for i := range t.owner {
		t.owner[i] = -1
	}
	return t
}

// tableFromSlots builds a table from a CLUSTER SLOTS reply.
func tableFromSlots(slots []redis.ClusterSlot) *slotTable {
	t := emptyTable()
	index := map[string]int32{}
	for _, r := range slots {
		if len(r.Nodes) == 0 || r.Start < 0 || r.End >= SlotCount || r.Start > r.End {
			continue
		}
		m := r.Nodes[0].Addr
		i, ok := index[m]
		if !ok {
			i = int32(len(t.shards))
			index[m] = i
			t.shards = append(t.shards, Shard{Master: m})
		}
		for _, n := range r.Nodes[1:] {
			if !slices.Contains(t.shards[i].Replicas, n.Addr) {
				t.shards[i].Replicas = append(t.shards[i].Replicas, n.Addr)
			}
		}
		for s := r.Start; s <= r.End; s++ {
			t.owner[s] = i
		}
	}
	return t
}

// master returns the master address of slot s, "" when unserved.
func (t *slotTable) master(s int) string {
	if i := t.owner[s]; i >= 0 {
		return t.shards[i].Master
	}
	return ""
}

// isMaster reports whether addr is the master of some slot.
func (t *slotTable) isMaster(addr string) bool {
	k := nodeKey(addr)
	for _, sh := range t.shards {
		if nodeKey(sh.Master) == k {
			return true
		}
	}
	return false
}

// withOwner returns a copy of t with slot s served by master addr.
func (t *slotTable) withOwner(s int, addr string) *slotTable {
	return t.withOwners([]int{s}, addr)
}

// withOwners returns a copy of t with slots served by master addr.
func (t *slotTable) withOwners(slots []int, addr string) *slotTable {
	n := &slotTable{owner: t.owner, shards: slices.Clone(t.shards)}
	i := int32(-1)
	for j, sh := range n.shards {
		if sh.Master == addr {
			i = int32(j)
			break
		}
	}
	if i < 0 {
		i = int32(len(n.shards))
		n.shards = append(n.shards, Shard{Master: addr})
	}
	for _, s := range slots {
		n.owner[s] = i
	}
	return n
}

// withOwnersFrom returns a copy of t with slots served by master addr, as
// they were in old: addr's replicas are t's if t lists addr as a master,
// else old's.
func (t *slotTable) withOwnersFrom(old *slotTable, slots []int, addr string) *slotTable {
	n := t.withOwners(slots, addr)
	for i := range n.shards {
		if n.shards[i].Master != addr || len(n.shards[i].Replicas) > 0 {
			continue
		}
		for _, sh := range old.shards {
			if sh.Master == addr {
				n.shards[i].Replicas = slices.Clone(sh.Replicas)
			}
		}
	}
	return n
}

// clusterSlots renders t as go-redis's ClusterSlots reply: one range per
// run of consecutive slots with the same shard.
func (t *slotTable) clusterSlots() []redis.ClusterSlot {
	var out []redis.ClusterSlot
	for s := 0; s < SlotCount; {
		i := t.owner[s]
		e := s
		for e+1 < SlotCount && t.owner[e+1] == i {
			e++
		}
		if i >= 0 {
			sh := t.shards[i]
			nodes := make([]redis.ClusterNode, 0, 1+len(sh.Replicas))
			nodes = append(nodes, redis.ClusterNode{Addr: sh.Master})
			for _, r := range sh.Replicas {
				nodes = append(nodes, redis.ClusterNode{Addr: r})
			}
			out = append(out, redis.ClusterSlot{Start: s, End: e, Nodes: nodes})
		}
		s = e + 1
	}
	return out
}

// diff returns the slots whose master differs between t and u.
func (t *slotTable) diff(u *slotTable) []int {
	var out []int
	for s := range SlotCount {
		if t.master(s) != u.master(s) {
			out = append(out, s)
		}
	}
	return out
}

// sameReplicas reports whether t and u list the same replicas per master.
func (t *slotTable) sameReplicas(u *slotTable) bool {
	rep := func(x *slotTable) map[string][]string {
		m := map[string][]string{}
		for _, sh := range x.shards {
			r := slices.Clone(sh.Replicas)
			slices.Sort(r)
			m[sh.Master] = r
		}
		return m
	}
	a, b := rep(t), rep(u)
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !slices.Equal(v, w) {
			return false
		}
	}
	return true
}

// addrs returns every address in t: masters first, then replicas.
func (t *slotTable) addrs() (masters, replicas []string) {
	for _, sh := range t.shards {
		masters = append(masters, sh.Master)
		replicas = append(replicas, sh.Replicas...)
	}
	return masters, replicas
}

// slotKeys[s] is a short key that hashes to slot s, used to ask go-redis
// which node its current state routes the slot to.
var slotKeys = sync.OnceValue(func() []string {
	keys := make([]string, SlotCount)
	left := SlotCount
	for i := 0; left > 0; i++ {
		k := itoa(i)
		if s := Slot(k); keys[s] == "" {
			keys[s] = k
			left--
		}
	}
	return keys
})

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	for i > 0 {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
	}
	return string(b[n:])
}
