package node

import (
	"net"
	"strconv"
	"time"
)

// NodeStats is a read-only snapshot of a node's counters and state, for
// metrics exporters. It reads the same sources as INFO.
type NodeStats struct {
	// Role is "master" or "slave" (INFO's role).
	Role string
	// ConnectedClients counts client connections, replicas excluded.
	ConnectedClients int
	// UsedMemory is INFO's used_memory in bytes.
	UsedMemory int64
	// CommandsProcessed is INFO's total_commands_processed.
	CommandsProcessed int64
	// Commands are the commands called at least once (INFO commandstats).
	Commands []CommandStats
	// Keys are the non-empty databases (INFO keyspace).
	Keys []DBStats
	// ReplOffset is master_repl_offset.
	ReplOffset int64
	// Replicas are the replicas connected to this node.
	Replicas []ReplicaStats
	// MasterAddr is the master's "host:port" on a replica, "" on a master.
	MasterAddr string
	// MasterLinkUp tells whether a replica's link to its master is up.
	MasterLinkUp bool
}

// CommandStats are one command's counters (subcommands as "client|list").
type CommandStats struct {
	Name string
	// Calls counts completed calls and Usec their total time in µs.
	Calls, Usec int64
	// Failed counts calls that replied an error, Rejected calls refused
	// before running (arity, ACL, OOM...).
	Failed, Rejected int64
}

// DBStats is one database's key counts.
type DBStats struct {
	DB            int
	Keys, Expires int64
}

// ReplicaStats is one replica as its master sees it.
type ReplicaStats struct {
	// Addr is the replica's announced "ip:port".
	Addr string
	// State is "wait_bgsave", "send_bulk" or "online".
	State string
	// AckOffset is the last replication offset the replica acknowledged.
	AckOffset int64
	// LagBytes is the master's offset minus AckOffset.
	LagBytes int64
	// LagSeconds is the time since the replica's last acknowledgement.
	LagSeconds float64
}

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
