// Package clusternode is the node's side of cluster mode (cluster-enabled
// yes) that needs neither the server nor a client: the cluster machine's
// runner, the routing the dispatcher reads without locks, the applier
// that carries out in order what the machine asks of the node, the
// machine's side of whole-slot migration (slotmig.Host's Cluster and
// Dataset parts), the CLUSTER and cluster DEBUG subcommands over a small
// Reply, the existence check of a migrating slot's key, and a slot's key
// listing, trim and deletion over the keyspace.
//
// The package does not import the node. The node implements Host (what
// the machine's Ready asks of it: a role change, the deletion of a lost
// slot's keys, a write pause, a bus delivery) and MigHost (the
// replication stream and command execution a migration needs), and keeps
// only the seams that need its Server or Client: the dispatcher's checks,
// the command table rows, the blocked clients.
package clusternode

import (
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/cluster/runner"
	"github.com/shardis/shardis/internal/node/slotmig"
)

// Host is what the machine's Ready asks of the node. Every method but
// PushTopology and BlockedClients runs on the applier goroutine, in the
// order the machine asked, and may wait on the keyspace; PushTopology and
// BlockedClients run under the runner's machine lock and must not.
type Host interface {
	// BecomeMaster and BecomeReplica carry out a role change.
	BecomeMaster()
	BecomeReplica(ip string, port int)
	// DeleteKeysInSlot deletes database 0's keys in slot, not propagated
	// (every node of the shard does it), and returns their number.
	DeleteKeysInSlot(slot int) int
	// PauseWrites pauses writes for d as CLIENT PAUSE WRITE does and
	// waits until the writes in flight are done; true when they are
	// within d.
	PauseWrites(d time.Duration) bool
	// Unpause ends a pause PauseWrites started.
	Unpause()
	// Deliver hands a PUBLISH or SPUBLISH from the bus to the local
	// subscribers.
	Deliver(d cluster.Delivery)
	// RemoveShardChannels unsubscribes every client from the shard
	// channels of slots.
	RemoveShardChannels(slots []int)
	// BlockedClients reports whether a client is blocked on keys;
	// RedirectBlocked then unblocks those the routing rt no longer
	// serves here.
	BlockedClients() bool
	RedirectBlocked(rt *cluster.Routing)
	// PushTopology announces a batch's slot map changes to the node's
	// clients.
	PushTopology(m *cluster.Machine, rd *cluster.Ready)
	// EndpointType is cluster-preferred-endpoint-type.
	EndpointType() string
	// CountKeysInSlot and KeysInSlot are database 0's per-slot index
	// (count < 0: every key of the slot).
	CountKeysInSlot(slot int) int
	KeysInSlot(slot, count int) []string
	// IsReplica reports whether the node replicates a master; FlushAll
	// empties every database (CLUSTER RESET of a replica).
	IsReplica() bool
	FlushAll()
}

// Mode is a node's cluster mode: the machine's runner, and the routing
// the dispatcher reads without locks. The runner's lock guards the
// machine; what the machine asks of the node (replicate from a master,
// delete the keys of lost slots, deliver a PUBLISH from the bus) runs in
// order on one applier goroutine, so no holder of that lock waits on the
// keyspace.
type Mode struct {
	h     Host
	log   *slog.Logger
	r     *runner.Runner
	route atomic.Pointer[cluster.Routing]
	// scratch is filled after every Ready and published when it differs
	// from route (guarded by the runner's machine lock, under which
	// onReady runs).
	scratch cluster.Routing
	apply   chan func()
	// loaded is closed once the dataset is loaded (DatasetLoaded): the
	// applier waits for it, so a replica named by nodes.conf does not
	// start its master link (and a full sync) while its AOF or RDB is
	// still loading, as Redis loads from disk before its crons run.
	loaded chan struct{}
	// mig is whole-slot migration's task table and write gate.
	mig     *slotmig.Engine
	stop    chan struct{}
	stopped chan struct{}
	// fence is the machine's cluster fence as of the last batch
	// (cluster/fence.go): the time it comes up, in nanoseconds since
	// fenceBase (monotonic), or fenceOff.
	fence     atomic.Int64
	fenceBase time.Time
}

// fenceOff is Mode.fence while the machine keeps no fence.
const fenceOff = math.MaxInt64

// Init makes the zero cm a Mode with an empty routing (no slot served)
// and starts its applier, which waits for DatasetLoaded; Start starts the
// bus. (Init in place lets the node embed the Mode by value: the
// dispatcher's routing load is one indirection from the server.) A Mode
// must not be copied.
func (cm *Mode) Init(h Host, mh MigHost, log *slog.Logger) {
	cm.h, cm.log = h, log
	cm.apply, cm.loaded = make(chan func(), 1024), make(chan struct{})
	cm.stop, cm.stopped = make(chan struct{}), make(chan struct{})
	cm.mig = slotmig.New(migHost{MigHost: mh, m: cm}, log)
	cm.fenceBase = time.Now()
	cm.fence.Store(fenceOff)
	cm.route.Store(&cluster.Routing{Me: 0, MyMaster: -1}) // every slot unserved
	go cm.applier()
}

// Start loads nodes.conf and starts the bus on machine m, as Redis's
// clusterInit; opt's OnReady is the Mode's. On an error the Mode is
// closed.
func (cm *Mode) Start(m *cluster.Machine, opt runner.Options) error {
	opt.OnReady = cm.onReady
	r, err := runner.Start(m, opt)
	if err != nil {
		close(cm.stop)
		<-cm.stopped
		return err
	}
	cm.r = r
	// The first Ready ran before r was set; make sure the routing and a
	// replica's master link reflect the loaded configuration.
	_ = r.Do(func(m *cluster.Machine, _ time.Time) { cm.refreshRouting(m) })
	return nil
}

// Close saves nodes.conf, closes the bus and stops the applier.
func (cm *Mode) Close() {
	if cm.r != nil {
		cm.r.Close()
	}
	close(cm.stop)
	<-cm.stopped
}

// Runner is the machine's runner, nil until Start succeeded.
func (cm *Mode) Runner() *runner.Runner { return cm.r }

// Routing is the routing the node serves with now.
func (cm *Mode) Routing() *cluster.Routing { return cm.route.Load() }

// Migrations is whole-slot migration's engine.
func (cm *Mode) Migrations() *slotmig.Engine { return cm.mig }

// Stopping is closed once Close began.
func (cm *Mode) Stopping() <-chan struct{} { return cm.stop }

// Loaded is closed by DatasetLoaded.
func (cm *Mode) Loaded() <-chan struct{} { return cm.loaded }

// DatasetLoaded lets the applier run (see Mode.loaded); it is called once.
func (cm *Mode) DatasetLoaded() { close(cm.loaded) }

// Do runs fn on the machine (under the runner's lock, on the caller's
// goroutine) and returns once its Ready is carried out and a save it
// asked for is written; false if the bus is closed.
func (cm *Mode) Do(fn func(m *cluster.Machine, now time.Time)) bool {
	return cm.r.Do(fn) == nil
}

// Post queues fn for the machine's loop without waiting.
func (cm *Mode) Post(fn func(m *cluster.Machine, now time.Time)) bool {
	return cm.r.Post(fn)
}

// Tick is the bus's cron beat (Redis's clusterCron); nothing before Start.
func (cm *Mode) Tick() {
	if cm.r != nil {
		cm.r.Tick()
	}
}

// SetConfig passes the directives of a CONFIG SET of a cluster directive
// to the runner and the machine.
func (cm *Mode) SetConfig(sendBufLimit int64, cfg cluster.Config) {
	if cm.r == nil {
		return
	}
	cm.r.SetSendBufLimit(sendBufLimit)
	cm.Do(func(m *cluster.Machine, now time.Time) {
		if err := m.SetConfig(now, cfg); err != nil {
			cm.log.Warn("cluster: config not applied", "err", err)
		}
	})
}

// Connections is INFO's cluster_connections: as Redis's
// getClusterConnectionsCount, two links per known node other than myself.
func (cm *Mode) Connections() int {
	if cm.r == nil {
		return 0
	}
	n := 0
	cm.Do(func(m *cluster.Machine, _ time.Time) { n = len(m.KnownNodes()) })
	if n == 0 {
		return 0
	}
	return (n - 1) * 2
}

// LinksMemory is INFO's mem_cluster_links: the bytes allocated for the
// links' send buffers (Redis adds each link's struct and receive buffer;
// the runner reports what it owns).
func (cm *Mode) LinksMemory() int {
	if cm.r == nil {
		return 0
	}
	total := 0
	for _, b := range cm.r.LinkBuffers() {
		total += b.Allocated
	}
	return total
}

// Fenced reports whether the cluster fence is up at now, as the machine
// left it after its last batch. Time alone only brings the fence up; an
// input moves it earlier only by counting one more master (a replica
// promoted, a node learnt), which takes effect here once the batch's
// Ready is carried out (its sends and config save). Lock-free: the write
// path asks it.
func (cm *Mode) Fenced(now time.Time) bool {
	return now.Sub(cm.fenceBase) > time.Duration(cm.fence.Load())
}

// publishFence stores the machine's fence for Fenced.
func (cm *Mode) publishFence(m *cluster.Machine) {
	v := int64(fenceOff)
	if until, on := m.Fence(); on {
		v = int64(until.Sub(cm.fenceBase))
	}
	cm.fence.Store(v)
}

// onReady runs under the runner's machine lock after every batch.
func (cm *Mode) onReady(m *cluster.Machine, rd *cluster.Ready) {
	cm.publishFence(m)
	h := cm.h
	// The slot map is published before the role change and the unpause
	// below are applied: a master the batch demotes answers the writes it
	// held (a manual failover's pause) and any later ones with MOVED to
	// the new owner, never READONLY under a slot map that still names it.
	lost := cm.publishRouting(m)
	h.PushTopology(m, rd)
	if rc := rd.RoleChange; rc != nil {
		rc := *rc
		cm.enqueue(func() {
			if rc.Master == "" {
				h.BecomeMaster()
			} else {
				h.BecomeReplica(rc.IP, rc.Port)
			}
		})
	}
	if sc := rd.SlotsChanged; sc != nil && len(cm.mig.SkipDeleteKeys(sc.DeleteKeys)) > 0 {
		slots := cm.mig.SkipDeleteKeys(sc.DeleteKeys)
		cm.enqueue(func() {
			for _, slot := range slots {
				h.DeleteKeysInSlot(slot)
			}
		})
	}
	if rd.PauseWrites > 0 {
		// A replica asked for a manual failover: pause writes as CLIENT
		// PAUSE WRITE does, wait until the writes in flight are done,
		// then tell the machine, whose next offset is final.
		d := rd.PauseWrites
		cm.enqueue(func() {
			if h.PauseWrites(d) {
				cm.r.Post(func(m *cluster.Machine, now time.Time) { m.WritesPaused(now) })
			}
		})
	}
	if rd.Unpause {
		cm.enqueue(h.Unpause)
	}
	for _, d := range rd.Deliveries {
		d := d
		cm.enqueue(func() { h.Deliver(d) })
	}
	for _, ev := range rd.Events {
		cm.log.Info("cluster: "+string(ev.Type), "node", ev.Node, "detail", ev.Detail)
	}
	cm.dropShardChannels(lost)
}

// refreshRouting publishes the machine's routing when it changed, and
// drops the shard channels of the slots this node's shard stopped serving.
func (cm *Mode) refreshRouting(m *cluster.Machine) {
	cm.dropShardChannels(cm.publishRouting(m))
}

// publishRouting publishes the machine's routing when it changed and
// returns the slots this node's shard stopped serving.
func (cm *Mode) publishRouting(m *cluster.Machine) []int {
	// scratch always holds what was last published: FillRouting's
	// "unchanged" spares the idle loop a compare of the slot tables.
	if !m.FillRouting(&cm.scratch) {
		return nil
	}
	cur := cm.route.Load()
	// The published copy shares scratch's slot chunks: the next fill
	// copies the chunks it writes (one per SETSLOT), not the tables.
	next := cm.scratch.Share()
	cm.route.Store(next)
	cm.mig.RouteChanged()
	if cm.h.BlockedClients() {
		cm.enqueue(func() { cm.h.RedirectBlocked(next) })
	}
	changed, ok := cm.scratch.ChangedSlots()
	if !ok {
		changed = nil
	}
	return cluster.LostShardSlots(cur, next, changed, ok)
}

// dropShardChannels unsubscribes the shard channels of lost slots, after
// the deliveries already queued.
func (cm *Mode) dropShardChannels(lost []int) {
	if len(lost) > 0 {
		cm.enqueue(func() { cm.h.RemoveShardChannels(lost) })
	}
}

func (cm *Mode) enqueue(fn func()) {
	select {
	case cm.apply <- fn:
	case <-cm.stop:
	}
}

func (cm *Mode) applier() {
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
