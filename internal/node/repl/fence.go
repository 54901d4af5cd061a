package repl

// The Sentinel fence: a master with min-replicas-ack n > 0 watched by
// Sentinels stops acknowledging writes on its own once it can no longer be
// sure it is still the master (docs/ARCHITECTURE.md, "Acknowledged
// writes").
//
// The gap it closes: the election rule (internal/sentinel/ackrule.go) reads
// the replicas' offsets after the master stopped, and assumes the master no
// longer gets acknowledgements through them. A partition that cuts the
// Sentinels from the master but not the master from a replica breaks that
// assumption: the master keeps acknowledging writes through the replica
// after its offset was read, and a promoted sibling of equal offset lacks
// them.
//
// The mechanism. A Sentinel PINGs the master every ping period (at most
// down-after-milliseconds, 1 s by default) and publishes its hello on
// __sentinel__:hello every 2 s, naming itself by run id. The master
// remembers, per Sentinel run id seen in a hello since it became a master,
// when it last received a PING on that Sentinel's connection. It is
// *fenced* while fewer than a majority of those Sentinels pinged it within
// SentinelLease: a fenced master refuses writes before they run
// (NOQUORUM), and a write it applied whose acknowledgement is decided while
// it is fenced gets the UNACKED reply instead of its success reply, however
// many replicas acknowledged it.
//
// The bound, and why a failover cannot beat it. A Sentinel declares the
// master subjectively down at T only when no valid PING reply arrived for
// down-after-milliseconds D: its oldest unanswered PING was sent at or
// before T−D. If the master received a PING from that Sentinel at r and
// the reply reached the Sentinel (a partition cuts both directions), the
// Sentinel's down-after clock restarted at or after r, so r ≤ T−D. A
// failover needs the master objectively down: a quorum of Sentinels
// reporting it down, each at some T ≤ T_odown of the leader. With the
// quorum a majority of the Sentinels the master knows, any majority the
// master still hears from shares one Sentinel with that quorum; so a
// master not fenced at t heard that Sentinel at r ≥ t−SentinelLease with
// r ≤ T_odown−D, that is t ≤ T_odown − D + SentinelLease. The master
// advertises SentinelLease in INFO (min_replicas_ack_sentinel_lease), and
// our Sentinel counts for the rule only the replica offsets it asked for
// after T_odown − D + lease (and after SDOWN): every write acknowledged
// with a success reply was then on the acknowledging replica before its
// offset was read.
// Assumed: clocks run at the same rate; every Sentinel has the same D; the
// master has seen every Sentinel's hello since it became a master (INFO
// min_replicas_ack_sentinels shows how many it knows).
//
// In cluster mode the cluster fence (internal/node/cluster/fence.go, the
// masters' PONGs instead of the Sentinels' PINGs) is kept by the cluster
// machine, which the node plugs in with SetClusterFence: the write gate
// and the acknowledgement ask one predicate (Fenced) for both, and the
// error names the fence that is up (FenceError).

import (
	"bytes"
	"time"
)

// SentinelLease is how long a Sentinel's PING keeps the master unfenced.
// Safety does not depend on it (our Sentinel waits for it, less its
// down-after, before reading offsets); it must exceed the Sentinels' ping
// period (1 s) with a margin, or a healthy master fences between PINGs.
const SentinelLease = 2 * time.Second

// SentinelHelloChannel is the channel Sentinels publish their hellos on.
const SentinelHelloChannel = "__sentinel__:hello"

// ErrFenced is the error a fenced master refuses writes with.
const ErrFenced = "NOQUORUM Lost contact with the majority of the Sentinels; writes are refused until they are reached again (min-replicas-ack)"

// ErrClusterFenced is the error a master fenced by the cluster fence
// refuses writes with.
const ErrClusterFenced = "NOQUORUM Lost contact with the majority of the cluster's masters; writes are refused until they are reached again (min-replicas-ack)"

// FenceKind names the fence that is up.
type FenceKind int

// The fences.
const (
	FenceNone      FenceKind = iota // not fenced
	FenceSentinels                  // the Sentinel fence
	FenceCluster                    // the cluster fence
)

// Fence is the Sentinel fence's state, and the cluster fence's predicate
// (not safe for concurrent use: the Master's lock guards it).
type Fence struct {
	// last is, by Sentinel run id, the last PING received from it.
	last map[string]time.Time
	// cluster reports whether the cluster fence is up (nil: not in
	// cluster mode).
	cluster func(now time.Time) bool
}

// HelloRunID returns the run id of a Sentinel hello
// (ip,port,runid,current_epoch,master_name,master_ip,master_port,master_config_epoch),
// or "" when payload is not one.
func HelloRunID(payload []byte) string {
	if bytes.Count(payload, []byte{','}) != 7 {
		return ""
	}
	f := bytes.SplitN(payload, []byte{','}, 4)
	if len(f[2]) != 40 {
		return ""
	}
	return string(f[2])
}

// Known registers a Sentinel run id seen in a hello; lastPing is when its
// connection last sent PING (zero if never).
func (f *Fence) Known(runID string, lastPing time.Time) {
	if f.last == nil {
		f.last = map[string]time.Time{}
	}
	if t, ok := f.last[runID]; !ok || lastPing.After(t) {
		f.last[runID] = lastPing
	}
}

// Ping records a PING from Sentinel runID at now.
func (f *Fence) Ping(runID string, now time.Time) {
	if _, ok := f.last[runID]; ok {
		f.last[runID] = now
	}
}

// Reset forgets every Sentinel (the node became a replica, or was
// promoted: the Sentinels watching it are learned again). The cluster
// fence is the cluster machine's and stays.
func (f *Fence) Reset() { f.last = nil }

// Sentinels returns how many Sentinels the fence knows.
func (f *Fence) Sentinels() int { return len(f.last) }

// Fenced reports whether a fence is up at now (Kind).
func (f *Fence) Fenced(now time.Time) bool { return f.Kind(now) != FenceNone }

// Kind returns the fence that is up at now: the Sentinel fence while
// fewer than a majority of the known Sentinels pinged within
// SentinelLease (a master no Sentinel watches has none), else the cluster
// fence when its predicate says so.
func (f *Fence) Kind(now time.Time) FenceKind {
	if f.sentinelsFenced(now) {
		return FenceSentinels
	}
	if f.cluster != nil && f.cluster(now) {
		return FenceCluster
	}
	return FenceNone
}

func (f *Fence) sentinelsFenced(now time.Time) bool {
	if len(f.last) == 0 {
		return false
	}
	heard := 0
	for _, t := range f.last {
		if !t.IsZero() && now.Sub(t) <= SentinelLease {
			heard++
		}
	}
	return heard < len(f.last)/2+1
}

// SentinelHello registers the Sentinel runID whose hello arrived on a
// connection that last sent PING at lastPing (zero if never); nothing on a
// replica.
func (m *Master) SentinelHello(runID string, lastPing time.Time) {
	m.mu.Lock()
	if !m.linked {
		m.fence.Known(runID, lastPing)
		m.fenceKnown.Store(true)
	}
	m.mu.Unlock()
}

// SentinelPing records a PING from the Sentinel runID at now.
func (m *Master) SentinelPing(runID string, now time.Time) {
	m.mu.Lock()
	m.fence.Ping(runID, now)
	m.mu.Unlock()
}

// SetClusterFence plugs in the cluster fence's predicate (cluster mode:
// the cluster machine's Fenced, internal/node/cluster/fence.go); it must
// be safe to call under the Master's lock.
func (m *Master) SetClusterFence(fenced func(now time.Time) bool) {
	m.mu.Lock()
	m.fence.cluster = fenced
	m.mu.Unlock()
	m.clusterFence.Store(fenced != nil)
}

// Fenced reports whether a fence is up at now: a master with
// min-replicas-ack on that fewer than a majority of its Sentinels pinged
// within SentinelLease, or that the cluster fence holds back.
func (m *Master) Fenced(now time.Time) bool { return m.FenceKind(now) != FenceNone }

// FenceKind returns the fence up at now (Fenced).
func (m *Master) FenceKind(now time.Time) FenceKind {
	if !m.fenceKnown.Load() && !m.clusterFence.Load() {
		return FenceNone
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fenceKindLocked(now)
}

// FenceError returns the error refusing writes while a fence is up at
// now, or "".
func (m *Master) FenceError(now time.Time) string {
	switch m.FenceKind(now) {
	case FenceSentinels:
		return ErrFenced
	case FenceCluster:
		return ErrClusterFenced
	}
	return ""
}

func (m *Master) fencedLocked(now time.Time) bool { return m.fenceKindLocked(now) != FenceNone }

func (m *Master) fenceKindLocked(now time.Time) FenceKind {
	if m.linked || m.ack.Need() <= 0 {
		return FenceNone
	}
	return m.fence.Kind(now)
}
