package node

import (
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/cluster/push"
	"github.com/shardis/shardis/internal/node/cluster/runner"
	"github.com/shardis/shardis/internal/node/slotmig"
)

// clusterMode is the node's side of cluster mode (cluster-enabled yes):
// the machine's runner, and the routing the dispatcher reads without
// locks. The runner's lock guards the machine; what the machine asks of
// the node (replicate from a master, delete the keys of lost slots,
// deliver a PUBLISH from the bus) runs in order on one applier goroutine,
// so no holder of that lock waits on the keyspace.
type clusterMode struct {
	srv   *Server
	r     *runner.Runner
	route atomic.Pointer[cluster.Routing]
	// scratch is filled after every Ready and published when it differs
	// from route (guarded by the runner's machine lock, under which
	// onReady runs).
	scratch cluster.Routing
	apply   chan func()
	// loaded is closed once the dataset is loaded (Listen): the applier
	// waits for it, so a replica named by nodes.conf does not start its
	// master link (and a full sync) while its AOF or RDB is still loading,
	// as Redis loads from disk before its crons run.
	loaded chan struct{}
	// mig is whole-slot migration's task table and write gate (slotmig.go).
	mig     *slotmig.Engine
	stop    chan struct{}
	stopped chan struct{}

	// push announces slot map changes to this node's clients (cluster/push, cluster_push.go).
	push     *push.Pusher
	pushOnce sync.Once
}

// clusterLocal answers the machine's questions about the node's data.
type clusterLocal struct{ s *Server }

func (l clusterLocal) KeysInSlot(slot int) int { return int(l.s.dbs[0].CountKeysInSlot(slot)) }
func (l clusterLocal) DBSize() int             { return int(l.s.dbs[0].Size()) }
func (l clusterLocal) ReplOffset() int64       { return l.s.repl.clusterOffset() }

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

// clusterMachineConfig derives the machine's settings from the directives.
func (s *Server) clusterMachineConfig() cluster.Config {
	cfg := cluster.DefaultConfig()
	port := int(s.cfg.Int(DirPort))
	if p := int(s.cfg.Int(DirClusterAnnouncePort)); p != 0 {
		port = p
	}
	cfg.Port = port
	switch {
	case s.cfg.Int(DirClusterAnnounceBusPort) != 0:
		cfg.CPort = int(s.cfg.Int(DirClusterAnnounceBusPort))
	case s.cfg.Int(DirClusterPort) != 0:
		cfg.CPort = int(s.cfg.Int(DirClusterPort))
	default:
		cfg.CPort = int(s.cfg.Int(DirPort)) + cluster.PortIncr
	}
	cfg.IP = s.cfg.Get(DirClusterAnnounceIP)
	cfg.Hostname = s.cfg.Get(DirClusterAnnounceHostname)
	cfg.NodeTimeout = time.Duration(s.cfg.Int(DirClusterNodeTimeout)) * time.Millisecond
	cfg.RequireFullCoverage = s.cfg.Bool(DirClusterRequireFullCoverage)
	cfg.AllowReadsWhenDown = s.cfg.Bool(DirClusterAllowReadsWhenDown)
	cfg.AllowPubsubShardWhenDown = s.cfg.Bool(DirClusterAllowPubsubshardWhenDown)
	cfg.MigrationBarrier = int(s.cfg.Int(DirClusterMigrationBarrier))
	cfg.AllowReplicaMigration = s.cfg.Bool(DirClusterAllowReplicaMigration)
	cfg.ReplicaValidityFactor = int(s.cfg.Int(DirClusterReplicaValidityFactor))
	cfg.ReplicaNoFailover = s.cfg.Bool(DirClusterReplicaNoFailover)
	cfg.MinReplicasAck = int(s.cfg.Int(DirMinReplicasAck))
	cfg.ReplPingReplicaPeriod = time.Duration(s.cfg.Int(DirReplPingReplicaPeriod)) * time.Second
	cfg.Local = clusterLocal{s}
	return cfg
}

// startCluster loads nodes.conf and starts the bus, as Redis's clusterInit.
func (s *Server) startCluster() error {
	cfg := s.clusterMachineConfig()
	var seed [16]byte
	_, _ = crand.Read(seed[:])
	rng := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
	m, err := cluster.New(cfg, rng)
	if err != nil {
		return fmt.Errorf("node: cluster: %w", err)
	}
	busPort := int(s.cfg.Int(DirClusterPort))
	if busPort == 0 {
		busPort = int(s.cfg.Int(DirPort)) + cluster.PortIncr
	}
	if busPort > 65535 {
		return fmt.Errorf("node: cluster: Redis port number too high. Cluster communication port is 10,000 port numbers higher than your Redis port. Your Redis port number must be 55535 or less.")
	}
	var addrs []string
	for _, b := range strings.Fields(s.cfg.Get(DirBind)) {
		host, optional := bindHost(b)
		a := net.JoinHostPort(host, strconv.Itoa(busPort))
		if optional {
			a = "-" + a
		}
		addrs = append(addrs, a)
	}
	file := s.cfg.Get(DirClusterConfigFile)
	if !filepath.IsAbs(file) {
		file = filepath.Join(s.cfg.Get(DirDir), file)
	}
	cm := &clusterMode{srv: s, apply: make(chan func(), 1024), loaded: make(chan struct{}), mig: newSlotMigrations(s), stop: make(chan struct{}), stopped: make(chan struct{})}
	empty := &cluster.Routing{Me: 0, MyMaster: -1}
	for i := range empty.Owner {
		empty.Owner[i], empty.Migrating[i], empty.Importing[i] = -1, -1, -1
	}
	cm.route.Store(empty)
	s.cluster = cm
	go cm.applier()
	r, err := runner.Start(m, runner.Options{
		ListenAddrs:  addrs,
		ConfigFile:   file,
		SendBufLimit: s.cfg.Int(DirClusterLinkSendbufLimit),
		OnReady:      cm.onReady,
		Logger:       s.log,
	})
	if err != nil {
		close(cm.stop)
		<-cm.stopped
		s.cluster = nil
		return fmt.Errorf("node: cluster: %w", err)
	}
	cm.r = r
	// The first Ready ran before r was set; make sure the routing and a
	// replica's master link reflect the loaded configuration.
	_ = r.Do(func(m *cluster.Machine, _ time.Time) { cm.refreshRouting(m) })
	return nil
}

// stopCluster saves nodes.conf and closes the bus.
func (cm *clusterMode) close() {
	if cm.r != nil {
		cm.r.Close()
	}
	close(cm.stop)
	<-cm.stopped
}

// do runs fn on the machine (under the runner's lock, on the caller's
// goroutine) and returns once its Ready is carried out and a save it
// asked for is written; false if the bus is closed.
func (cm *clusterMode) do(fn func(m *cluster.Machine, now time.Time)) bool {
	return cm.r.Do(fn) == nil
}

// onReady runs under the runner's machine lock after every batch.
func (cm *clusterMode) onReady(m *cluster.Machine, rd *cluster.Ready) {
	s := cm.srv
	// The slot map is published before the role change and the unpause
	// below are applied: a master the batch demotes answers the writes it
	// held (a manual failover's pause) and any later ones with MOVED to
	// the new owner, never READONLY under a slot map that still names it.
	lost := cm.publishRouting(m)
	cm.pushTopology(m, rd)
	if rc := rd.RoleChange; rc != nil {
		rc := *rc
		cm.enqueue(func() {
			if rc.Master == "" {
				s.repl.becomeMaster()
			} else {
				s.repl.becomeReplica(rc.IP, rc.Port)
			}
		})
	}
	if sc := rd.SlotsChanged; sc != nil && len(cm.mig.SkipDeleteKeys(sc.DeleteKeys)) > 0 {
		slots := cm.mig.SkipDeleteKeys(sc.DeleteKeys)
		cm.enqueue(func() {
			for _, slot := range slots {
				s.deleteKeysInSlot(slot)
			}
		})
	}
	if rd.PauseWrites > 0 {
		// A replica asked for a manual failover: pause writes as CLIENT
		// PAUSE WRITE does, wait until the writes in flight are done,
		// then tell the machine, whose next offset is final.
		d := rd.PauseWrites
		cm.enqueue(func() {
			s.pause.set(time.Now().Add(d), false)
			if s.drainWrites(d) {
				cm.r.Post(func(m *cluster.Machine, now time.Time) { m.WritesPaused(now) })
			}
		})
	}
	if rd.Unpause {
		cm.enqueue(func() { s.pause.unpause() })
	}
	for _, d := range rd.Deliveries {
		d := d
		cm.enqueue(func() { s.deliverFromBus(d) })
	}
	for _, ev := range rd.Events {
		s.log.Info("cluster: "+string(ev.Type), "node", ev.Node, "detail", ev.Detail)
	}
	cm.dropShardChannels(lost)
}

// refreshRouting publishes the machine's routing when it changed, and
// drops the shard channels of the slots this node's shard stopped serving.
func (cm *clusterMode) refreshRouting(m *cluster.Machine) {
	cm.dropShardChannels(cm.publishRouting(m))
}

// publishRouting publishes the machine's routing when it changed and
// returns the slots this node's shard stopped serving.
func (cm *clusterMode) publishRouting(m *cluster.Machine) []int {
	// scratch always holds what was last published: FillRouting's
	// "unchanged" spares the idle loop a compare of the slot tables.
	if !m.FillRouting(&cm.scratch) {
		return nil
	}
	cur := cm.route.Load()
	next := cm.scratch
	next.Nodes = append([]cluster.RouteNode(nil), cm.scratch.Nodes...)
	cm.route.Store(&next)
	cm.mig.RouteChanged()
	if s := cm.srv; s.blocking.count.Load() > 0 {
		cm.enqueue(func() { s.redirectBlockedClients(&next) })
	}
	changed, ok := cm.scratch.ChangedSlots()
	if !ok {
		changed = nil
	}
	return lostShardSlots(cur, &next, changed, ok)
}

// dropShardChannels unsubscribes the shard channels of lost slots, after
// the deliveries already queued.
func (cm *clusterMode) dropShardChannels(lost []int) {
	if len(lost) > 0 {
		s := cm.srv
		cm.enqueue(func() { s.removeShardChannelsInSlots(lost) })
	}
}

// lostShardSlots is cluster.LostShardSlots.
var lostShardSlots = cluster.LostShardSlots

// removeShardChannelsInSlots unsubscribes every client from the shard
// channels of slots, each receiving "sunsubscribe <channel> <count>" as
// from Redis's removeChannelsInSlot (pubsubShardUnsubscribeAllClients).
func (s *Server) removeShardChannelsInSlots(slots []int) {
	in := make(map[int]bool, len(slots))
	for _, slot := range slots {
		in[slot] = true
	}
	s.pubsub.RemoveShards(func(name string) bool { return in[keySlot(name)] })
}

func (cm *clusterMode) enqueue(fn func()) {
	select {
	case cm.apply <- fn:
	case <-cm.stop:
	}
}

func (cm *clusterMode) applier() {
	defer close(cm.stopped)
	select {
	case <-cm.loaded:
	case <-cm.stop:
		return
	}
	for {
		select {
		case fn := <-cm.apply:
			fn()
		case <-cm.stop:
			return
		}
	}
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

// deleteKeysInSlot deletes every key of database 0 in slot, as Redis's
// delKeysInSlot (not propagated: every node of the shard does it).
func (s *Server) deleteKeysInSlot(slot int) int {
	db := s.dbs[0]
	keys := s.keysInSlot(slot, -1)
	n := 0
	for _, k := range keys {
		sh := db.KeyShard(k)
		sh.Mu.Lock()
		if db.Remove(k) != nil {
			n++
		}
		sh.Mu.Unlock()
		s.touchWatchedKey(0, k)
	}
	return n
}

// keysInSlot lists up to count keys (count < 0: all) of database 0 in
// slot, newest first as Redis's slot-to-keys list, from the keyspace's
// per-slot index (O(keys listed)).
func (s *Server) keysInSlot(slot, count int) []string {
	db := s.dbs[0]
	if count < 0 {
		count = db.CountKeysInSlot(slot)
	}
	return db.KeysInSlot(slot, count)
}

// applyClusterConfig passes a CONFIG SET of a cluster directive to the
// machine.
func applyClusterConfig(s *Server, _ string) {
	cm := s.cluster
	if cm == nil || cm.r == nil {
		return
	}
	cm.r.SetSendBufLimit(s.cfg.Int(DirClusterLinkSendbufLimit))
	cfg := s.clusterMachineConfig()
	cm.do(func(m *cluster.Machine, now time.Time) {
		if err := m.SetConfig(now, cfg); err != nil {
			s.log.Warn("cluster: config not applied", "err", err)
		}
	})
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

// datasetLoaded lets the applier run (see loaded); it is called once.
func (cm *clusterMode) datasetLoaded() { close(cm.loaded) }
