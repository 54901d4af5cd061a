package node

import (
	"fmt"
	"sync"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/cluster/push"
	"github.com/shardis/shardis/internal/node/clusternode"
	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/repl"
)

// clusterMode is the node's cluster mode (cluster-enabled yes): package
// clusternode's Mode (the machine's runner, the routing, the applier),
// served by clusterHost, and the topology pusher (cluster_push.go).
type clusterMode struct {
	clusternode.Mode
	srv *Server

	// push announces slot map changes to this node's clients (cluster/push, cluster_push.go).
	push     *push.Pusher
	pushOnce sync.Once

	// hold is the freeze of this replica's stream from a FAIL master
	// (cluster/freeze.go), which the machine sets after every input and
	// the master link reads (repl.Hold).
	hold repl.Hold
}

// clusterHost is the server as clusternode.Host: what the machine's Ready
// asks of the node.
type clusterHost struct{ s *Server }

func (h clusterHost) BecomeMaster()                     { h.s.repl.becomeMaster() }
func (h clusterHost) BecomeReplica(ip string, port int) { h.s.repl.becomeReplica(ip, port) }
func (h clusterHost) DeleteKeysInSlot(slot int) int     { return h.s.deleteKeysInSlot(slot) }
func (h clusterHost) Unpause()                          { h.s.pause.Unpause() }
func (h clusterHost) Deliver(d cluster.Delivery)        { h.s.deliverFromBus(d) }
func (h clusterHost) RemoveShardChannels(slots []int)   { h.s.removeShardChannelsInSlots(slots) }
func (h clusterHost) BlockedClients() bool              { return h.s.blocking.count.Load() > 0 }
func (h clusterHost) RedirectBlocked(rt *cluster.Routing) {
	h.s.redirectBlockedClients(rt)
}
func (h clusterHost) EndpointType() string {
	return h.s.cfg.Get(config.DirClusterPreferredEndpointType)
}
func (h clusterHost) CountKeysInSlot(slot int) int        { return h.s.dbs[0].CountKeysInSlot(slot) }
func (h clusterHost) KeysInSlot(slot, count int) []string { return h.s.keysInSlot(slot, count) }
func (h clusterHost) IsReplica() bool                     { return h.s.replicaMode.Load() }
func (h clusterHost) FlushAll()                           { h.s.flushAllData() }

// PushTopology runs under the machine lock, where s.cluster is set (startCluster).
func (h clusterHost) PushTopology(m *cluster.Machine, rd *cluster.Ready) {
	h.s.cluster.pushTopology(m, rd)
}

// PauseWrites pauses writes as CLIENT PAUSE WRITE does and waits until
// the writes in flight are done.
func (h clusterHost) PauseWrites(d time.Duration) bool {
	h.s.pause.Set(h.s.now().Add(d), false)
	return h.s.drainWrites(d)
}

// clusterLocal answers the machine's questions about the node's data.
type clusterLocal struct{ s *Server }

func (l clusterLocal) KeysInSlot(slot int) int { return int(l.s.dbs[0].CountKeysInSlot(slot)) }
func (l clusterLocal) DBSize() int             { return int(l.s.dbs[0].Size()) }
func (l clusterLocal) ReplOffset() int64       { return l.s.repl.clusterOffset() }

// HoldReplication is the machine's freeze decision (cluster.ReplHolder).
func (l clusterLocal) HoldReplication(addr string) {
	if cm := l.s.cluster; cm != nil {
		cm.hold.Set(addr)
	}
}

// ReplHold is the hold a master link of a cluster node obeys
// (repl.HoldHost); nil outside cluster mode.
func (h replicaHost) ReplHold() *repl.Hold {
	if cm := h.l.r.srv.cluster; cm != nil {
		return &cm.hold
	}
	return nil
}

// clusterOffset is the replication offset the bus announces, as Redis's
// (master_repl_offset on a master, replicationGetSlaveOffset on a
// replica): 0 on a replica from +FULLRESYNC until its new dataset is
// loaded, because Redis drops its cached master there. A replica at
// offset 0 is left out of CLUSTER SLOTS / SHARDS by the others
// (isReplicaAvailable), so a loading replica is hidden from clients.
func (r *replication) clusterOffset() int64 {
	r.mu.Lock()
	off, link := r.OffsetLocked(), r.link
	r.mu.Unlock()
	if link != nil && link.status().state == linkTransfer {
		return 0
	}
	return off
}

// MasterLastIO is the replica's data age reference for the election
// (cluster.MasterLink): the last interaction with the master while the
// link is up, when it went down otherwise.
func (l clusterLocal) MasterLastIO() time.Time {
	r := l.s.repl
	r.mu.Lock()
	link := r.link
	r.mu.Unlock()
	if link == nil {
		return time.Time{}
	}
	st := link.status()
	if st.state == linkConnected {
		return st.lastIO
	}
	return st.downSince
}

// clusterMachineConfig derives the machine's settings from the directives
// (clusternode.MachineConfig).
func (s *Server) clusterMachineConfig() cluster.Config {
	return clusternode.MachineConfig(s.cfg, clusterLocal{s})
}

// startCluster loads nodes.conf and starts the bus, as Redis's clusterInit.
func (s *Server) startCluster() error {
	m, err := clusternode.NewMachine(s.clusterMachineConfig())
	if err != nil {
		return fmt.Errorf("node: cluster: %w", err)
	}
	opts, err := clusternode.RunnerOptions(s.cfg, s.log)
	if err != nil {
		return fmt.Errorf("node: cluster: %w", err)
	}
	cm := &clusterMode{srv: s}
	cm.Init(clusterHost{s}, migHost{s}, s.log)
	s.cluster = cm
	if err := cm.Start(m, opts); err != nil {
		s.cluster = nil
		return fmt.Errorf("node: cluster: %w", err)
	}
	// The cluster fence (cluster/fence.go) gates writes and their
	// acknowledgements with the Sentinel fence's hook.
	s.repl.SetClusterFence(cm.Fenced)
	return nil
}

// removeShardChannelsInSlots unsubscribes every client from the shard
// channels of slots, each receiving "sunsubscribe <channel> <count>" as
// from Redis's removeChannelsInSlot (pubsubShardUnsubscribeAllClients).
func (s *Server) removeShardChannelsInSlots(slots []int) {
	s.pubsub.RemoveShards(clusternode.InSlots(slots))
}

// deliverFromBus hands a PUBLISH or SPUBLISH received on the bus to the
// local subscribers.
func (s *Server) deliverFromBus(d cluster.Delivery) {
	if d.Shard {
		s.publishShardLocal(string(d.Channel), d.Message)
		return
	}
	s.pubsub.publish(string(d.Channel), d.Message)
}

// deleteKeysInSlot deletes every key of database 0 in slot, not
// propagated (clusternode.DeleteSlot).
func (s *Server) deleteKeysInSlot(slot int) int {
	return clusternode.DeleteSlot(s.dbs[0], slot, func(k string) { s.touchWatchedKey(0, k) })
}

// keysInSlot lists up to count keys (count < 0: all) of database 0 in
// slot (clusternode.KeysInSlot).
func (s *Server) keysInSlot(slot, count int) []string {
	return clusternode.KeysInSlot(s.dbs[0], slot, count)
}

// applyClusterConfig passes a CONFIG SET of a cluster directive to the
// runner and the machine.
func applyClusterConfig(s *Server, _ string) {
	if cm := s.cluster; cm != nil {
		cm.SetConfig(s.cfg.Int(config.DirClusterLinkSendbufLimit), s.clusterMachineConfig())
	}
}

// flushAllData empties every database (a replica reset by CLUSTER RESET
// becomes an empty master, as Redis's clusterReset does).
func (s *Server) flushAllData() {
	var held []*sync.Mutex
	for _, db := range s.dbs {
		for i := range db.Shards {
			m := &db.Shards[i].Mu
			m.Lock()
			held = append(held, m)
		}
	}
	s.snapGuard(held)
	s.touchWatchedDBs(-1, -1)
	for _, db := range s.dbs {
		db.Flush()
	}
	for i := len(held) - 1; i >= 0; i-- {
		held[i].Unlock()
	}
}
