package node

import (
	"net"
	"strconv"
	"time"

	"github.com/shardis/shardis/internal/node/nodestats"
)

// NodeStats is a read-only snapshot of a node's counters and state, for
// metrics exporters (package nodestats).
type NodeStats = nodestats.NodeStats

// CommandStats are one command's counters (nodestats.CommandStats).
type CommandStats = nodestats.CommandStats

// DBStats is one database's key counts (nodestats.DBStats).
type DBStats = nodestats.DBStats

// ReplicaStats is one replica as its master sees it (nodestats.ReplicaStats).
type ReplicaStats = nodestats.ReplicaStats

// Stats returns a snapshot of the node's counters.
func (s *Server) Stats() NodeStats {
	st := NodeStats{Role: "master", UsedMemory: s.usedMemory(), CommandsProcessed: s.stats.commands.Load()}
	s.forEachClient(func(c *Client) {
		if !c.hasFlag(clientReplica) || c.hasFlag(clientMonitor) {
			st.ConnectedClients++
		}
	})
	for _, cmd := range s.allCommands() {
		cs := CommandStats{Name: cmd.fullName(), Calls: cmd.stats.calls.Load(), Usec: cmd.stats.usec.Load(),
			Failed: cmd.stats.failed.Load(), Rejected: cmd.stats.rejected.Load()}
		if cs.Calls != 0 || cs.Failed != 0 || cs.Rejected != 0 {
			st.Commands = append(st.Commands, cs)
		}
	}
	for i, db := range s.dbs {
		if keys, exp := db.Size(), db.Expires.Load(); keys != 0 || exp != 0 {
			st.Keys = append(st.Keys, DBStats{DB: i, Keys: keys, Expires: exp})
		}
	}
	r := s.repl
	r.mu.Lock()
	defer r.mu.Unlock()
	st.ReplOffset = r.OffsetLocked()
	if r.link != nil {
		st.Role = "slave"
		st.MasterAddr = net.JoinHostPort(r.link.host, strconv.Itoa(r.link.port))
		st.MasterLinkUp = r.link.status().state == linkConnected
	}
	now := time.Now()
	for _, ri := range r.ReplicasLocked() {
		rs := ReplicaStats{Addr: net.JoinHostPort(ri.IP(), strconv.Itoa(ri.Port())), State: ri.State,
			AckOffset: ri.AckOffset, LagBytes: max(st.ReplOffset-ri.AckOffset, 0)}
		if !ri.AckTime.IsZero() {
			rs.LagSeconds = now.Sub(ri.AckTime).Seconds()
		}
		st.Replicas = append(st.Replicas, rs)
	}
	return st
}
