package sentinel

import (
	"strings"
	"time"
)

// Role is the kind of a monitored instance.
type Role int

// Instance kinds.
const (
	RoleMaster Role = iota + 1
	RoleReplica
	RoleSentinel
)

// String returns Redis's name for the role: "master", "slave", "sentinel".
func (r Role) String() string {
	switch r {
	case RoleMaster:
		return "master"
	case RoleReplica:
		return "slave"
	case RoleSentinel:
		return "sentinel"
	}
	return "unknown"
}

// Message is an observation fed to Machine.Step. The set of messages is
// append-only.
type Message interface{ isMessage() }

// LinkUp reports that the command link to Addr is established (and, for
// masters and replicas, subscribed to __sentinel__:hello).
type LinkUp struct{ Addr Addr }

// LinkDown reports that the link to Addr failed or was closed.
type LinkDown struct{ Addr Addr }

// PingReply reports the reply to a PING sent to Addr: "PONG", or the text of
// an error reply such as "LOADING Redis is loading the dataset in memory".
type PingReply struct {
	Addr  Addr
	Reply string
}

// InfoReply reports the text of an INFO reply from Addr.
type InfoReply struct {
	Addr Addr
	Text string
}

// HelloReceived reports a message received on __sentinel__:hello (through a
// master or replica subscription, or a PUBLISH sent to this Sentinel).
type HelloReceived struct{ Payload string }

// MasterDownReply reports the reply of the Sentinel at Addr to
// SENTINEL IS-MASTER-DOWN-BY-ADDR about master MasterName.
type MasterDownReply struct {
	Addr        Addr
	MasterName  string
	Down        bool   // first element: 1 if it sees the master down
	Leader      string // second element: its voted leader run id, "*" if none
	LeaderEpoch uint64 // third element
}

// FreezeReply reports the replies to an ActFreeze sent to the replica at
// Addr for the failover of Epoch: Paused when CLIENT PAUSE answered +OK,
// and Text, the INFO that followed it (empty for a re-freeze, which reads
// no INFO, or when INFO failed).
type FreezeReply struct {
	Addr   Addr
	Epoch  uint64
	Paused bool
	Text   string
}

func (LinkUp) isMessage()          {}
func (LinkDown) isMessage()        {}
func (PingReply) isMessage()       {}
func (InfoReply) isMessage()       {}
func (HelloReceived) isMessage()   {}
func (MasterDownReply) isMessage() {}
func (FreezeReply) isMessage()     {}

// ActionKind says what an Action asks the runner to do. Append-only.
type ActionKind int

// Action kinds.
const (
	// ActConnect: open the link to Addr (command link, plus a pubsub link
	// subscribed to __sentinel__:hello unless Role is RoleSentinel). The
	// runner answers with LinkUp or LinkDown, also when already connected.
	ActConnect ActionKind = iota + 1
	// ActDisconnect: close the link to Addr.
	ActDisconnect
	// ActPing: send PING, report the reply with PingReply.
	ActPing
	// ActInfo: send INFO, report the reply with InfoReply.
	ActInfo
	// ActPublishHello: PUBLISH __sentinel__:hello Hello.String() to Addr;
	// fill Hello.IP with the link's local IP if it is empty.
	ActPublishHello
	// ActAskMasterDown: send SENTINEL IS-MASTER-DOWN-BY-ADDR MasterAddr.IP
	// MasterAddr.Port Epoch RunID, report the reply with MasterDownReply.
	ActAskMasterDown
	// ActReplicaOf: send, in one MULTI/EXEC, REPLICAOF Target (NO ONE if
	// Target is zero), CONFIG REWRITE, CLIENT KILL TYPE normal and
	// CLIENT KILL TYPE pubsub, and CLIENT UNPAUSE last if Unpause is set.
	ActReplicaOf
	// ActFreeze: send CLIENT PAUSE <Pause in ms> WRITE and then, unless
	// Refreeze, INFO replication (two commands in a row, not a MULTI:
	// outside a transaction a shardnode's CLIENT PAUSE replies only after
	// the writes in flight, the master's stream included, are in the
	// offset); report both replies with one FreezeReply carrying Epoch
	// (a re-freeze reports nothing). The replica freeze of ackrule.go.
	ActFreeze
	// ActUnpause: send CLIENT UNPAUSE (an aborted failover's replicas).
	ActUnpause
)

// Action is one thing the runner must do on the network.
type Action struct {
	Kind       ActionKind
	Addr       Addr   // the instance to talk to
	Role       Role   // the kind of that instance
	MasterName string // the master the action is about
	AuthUser   string // credentials for the instance ("" = none)
	AuthPass   string
	Hello      Hello  // ActPublishHello
	MasterAddr Addr   // ActAskMasterDown
	Epoch      uint64 // ActAskMasterDown: our current epoch; ActFreeze: the failover epoch
	RunID      string // ActAskMasterDown: our run id when asking for a vote, else "*"
	Target     Addr   // ActReplicaOf: new master, zero for NO ONE
	// Unpause: ActReplicaOf ends with CLIENT UNPAUSE (the replica was
	// frozen by this Sentinel's failover).
	Unpause bool
	// Pause is ActFreeze's pause length; Refreeze says it only extends
	// a freeze (no INFO, no reply reported). Epoch is the failover's.
	Pause    time.Duration
	Refreeze bool
	// Renames maps lower-case command names to the names to send
	// (rename-command); read-only.
	Renames map[string]string
}

// Command returns the name to send for command name (rename-command).
func (a Action) Command(name string) string {
	if r, ok := a.Renames[strings.ToLower(name)]; ok {
		return r
	}
	return name
}

// ScriptCall is one run of a user script: Path with Args.
type ScriptCall struct {
	Path string
	Args []string
}

// Ready is what the machine produced since the previous call to Ready.
type Ready struct {
	Actions []Action
	Events  []Event
	// Scripts are notification-script and client-reconfig-script runs to
	// start, in order.
	Scripts []ScriptCall
	// PersistConfig is set when the configuration changed (epochs, known
	// replicas and sentinels, masters) and must be rewritten to disk.
	PersistConfig bool
}
