// Package nodestats holds the read-only snapshot of a node's counters
// and state that metrics exporters read (the node's Server.Stats fills
// it from the same sources as INFO). It is data only.
package nodestats

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
