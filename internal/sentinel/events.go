package sentinel

import (
	"fmt"
	"strconv"
	"strings"
)

// Event names, exactly as redis-sentinel publishes them: each event is
// published on the channel named after it.
const (
	EventMonitor                 = "+monitor"
	EventUnmonitor               = "-monitor"
	EventResetMaster             = "+reset-master"
	EventReplica                 = "+slave"
	EventSentinel                = "+sentinel"
	EventDupSentinel             = "-dup-sentinel"
	EventSentinelAddressSwitch   = "+sentinel-address-switch"
	EventSentinelInvalidAddr     = "+sentinel-invalid-addr"
	EventReboot                  = "+reboot"
	EventRoleChange              = "+role-change"
	EventRoleMismatch            = "-role-change"
	EventSDown                   = "+sdown"
	EventSDownExit               = "-sdown"
	EventODown                   = "+odown"
	EventODownExit               = "-odown"
	EventNewEpoch                = "+new-epoch"
	EventTryFailover             = "+try-failover"
	EventVoteForLeader           = "+vote-for-leader"
	EventElectedLeader           = "+elected-leader"
	EventAbortNotElected         = "-failover-abort-not-elected"
	EventStateSelectReplica      = "+failover-state-select-slave"
	EventAbortNoGoodReplica      = "-failover-abort-no-good-slave"
	EventSelectedReplica         = "+selected-slave"
	EventStateSendReplicaOfNoOne = "+failover-state-send-slaveof-noone"
	EventStateWaitPromotion      = "+failover-state-wait-promotion"
	EventAbortReplicaTimeout     = "-failover-abort-slave-timeout"
	EventPromotedReplica         = "+promoted-slave"
	EventStateReconfReplicas     = "+failover-state-reconf-slaves"
	EventFailoverDetected        = "+failover-detected"
	EventReplicaReconfSent       = "+slave-reconf-sent"
	EventReplicaReconfSentBE     = "+slave-reconf-sent-be"
	EventReplicaReconfTimeout    = "-slave-reconf-sent-timeout"
	EventReplicaReconfInprog     = "+slave-reconf-inprog"
	EventReplicaReconfDone       = "+slave-reconf-done"
	EventFailoverEndForTimeout   = "+failover-end-for-timeout"
	EventFailoverEnd             = "+failover-end"
	EventSwitchMaster            = "+switch-master"
	EventConfigUpdateFrom        = "+config-update-from"
	EventConvertToReplica        = "+convert-to-slave"
	EventFixReplicaConfig        = "+fix-slave-config"
	EventTilt                    = "+tilt"
	EventTiltExit                = "-tilt"
)

// Events of shardis's Sentinel that redis-sentinel does not have.
const (
	// EventFreeze: the leader paused a replica's writes to read its
	// frozen offset (freeze.go); payload the replica and the epoch.
	EventFreeze = "+freeze-slave"
	// EventUnfreeze: an aborted failover unpaused a replica it froze.
	EventUnfreeze = "-freeze-slave"
)

// Level is the severity of an event, as in redis-sentinel's log.
type Level int

// Levels, lowest first.
const (
	LevelDebug Level = iota
	LevelVerbose
	LevelNotice
	LevelWarning
)

// Event is something a Sentinel announces: it is published on the channel
// Type with the message Payload, and logged.
type Event struct {
	Type    string // the channel, e.g. "+sdown"
	Payload string // the message, e.g. "master mymaster 127.0.0.1 6379"
	Level   Level  // log level; LevelDebug events are not published
	Master  string // name of the master the event concerns, "" if none
}

// String renders "<type> <payload>", the line redis-sentinel logs.
func (e Event) String() string { return e.Type + " " + e.Payload }

// instanceDesc renders Redis's "%@" instance description:
// "master <name> <ip> <port>" or
// "<type> <name> <ip> <port> @ <mastername> <masterip> <masterport>".
func instanceDesc(ri *instance) string {
	if ri.master == nil {
		return fmt.Sprintf("%s %s %s %d", ri.kind, ri.name, ri.addr.IP, ri.addr.Port)
	}
	m := ri.master
	return fmt.Sprintf("%s %s %s %d @ %s %s %d", ri.kind, ri.name, ri.addr.IP, ri.addr.Port,
		m.name, m.addr.IP, m.addr.Port)
}

// SwitchMaster is the content of a +switch-master payload.
type SwitchMaster struct {
	Name    string // the master's name
	OldAddr Addr   // the address of the master that failed
	NewAddr Addr   // the address of the promoted replica
}

// Payload renders the message redis-sentinel publishes on +switch-master:
// "<name> <oldip> <oldport> <newip> <newport>".
func (s SwitchMaster) Payload() string {
	return fmt.Sprintf("%s %s %d %s %d", s.Name, s.OldAddr.IP, s.OldAddr.Port, s.NewAddr.IP, s.NewAddr.Port)
}

// ParseSwitchMaster parses a +switch-master payload, "<name> <oldip>
// <oldport> <newip> <newport>", as Payload renders it. Both ports must be
// in 1..65535.
func ParseSwitchMaster(payload string) (SwitchMaster, error) {
	f := strings.Fields(payload)
	if len(f) != 5 {
		return SwitchMaster{}, fmt.Errorf("sentinel: malformed +switch-master payload %q", payload)
	}
	op, err1 := parsePort(f[2])
	np, err2 := parsePort(f[4])
	if err1 != nil || err2 != nil {
		return SwitchMaster{}, fmt.Errorf("sentinel: malformed +switch-master payload %q", payload)
	}
	return SwitchMaster{Name: f[0], OldAddr: Addr{f[1], op}, NewAddr: Addr{f[3], np}}, nil
}

func parsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, err
	}
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("sentinel: port %d out of range", n)
	}
	return n, nil
}
