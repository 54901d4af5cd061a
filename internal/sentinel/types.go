package sentinel

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Addr is the address of a monitored instance: an IP (or hostname) and a port.
type Addr struct {
	IP   string
	Port int
}

// String returns "ip:port" (with brackets around IPv6 addresses).
func (a Addr) String() string {
	if strings.Contains(a.IP, ":") {
		return "[" + a.IP + "]:" + strconv.Itoa(a.Port)
	}
	return a.IP + ":" + strconv.Itoa(a.Port)
}

// IsZero reports whether a is the zero address.
func (a Addr) IsZero() bool { return a.IP == "" && a.Port == 0 }

// Hello is the payload a Sentinel publishes on __sentinel__:hello every
// publish period: <ip>,<port>,<runid>,<current_epoch>,<master_name>,
// <master_ip>,<master_port>,<master_config_epoch>.
type Hello struct {
	IP           string // announced IP of the sending Sentinel; empty: the runner fills in its local address
	Port         int    // announced port of the sending Sentinel
	RunID        string // run id of the sending Sentinel
	CurrentEpoch uint64 // current epoch of the sending Sentinel
	MasterName   string // name of the master the hello is about
	MasterAddr   Addr   // address of that master, as the sender sees it
	ConfigEpoch  uint64 // configuration epoch of that master
}

// String renders the hello payload exactly as redis-sentinel does.
func (h Hello) String() string {
	return fmt.Sprintf("%s,%d,%s,%d,%s,%s,%d,%d", h.IP, h.Port, h.RunID, h.CurrentEpoch,
		h.MasterName, h.MasterAddr.IP, h.MasterAddr.Port, h.ConfigEpoch)
}

// ErrBadHello is returned by ParseHello for a malformed payload.
var ErrBadHello = errors.New("sentinel: malformed hello message")

// ParseHello parses a hello payload.
func ParseHello(s string) (Hello, error) {
	tok := strings.Split(s, ",")
	if len(tok) != 8 {
		return Hello{}, ErrBadHello
	}
	port, err1 := strconv.Atoi(tok[1])
	epoch, err2 := strconv.ParseUint(tok[3], 10, 64)
	mport, err3 := strconv.Atoi(tok[6])
	cepoch, err4 := strconv.ParseUint(tok[7], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return Hello{}, fmt.Errorf("%w: %w", ErrBadHello, err)
	}
	return Hello{IP: tok[0], Port: port, RunID: tok[2], CurrentEpoch: epoch, MasterName: tok[4],
		MasterAddr: Addr{tok[5], mport}, ConfigEpoch: cepoch}, nil
}

// Info holds what the Sentinel reads from an INFO reply.
type Info struct {
	RunID               string        // run_id, "" if absent
	Role                Role          // RoleMaster or RoleReplica, 0 if absent
	Replicas            []Addr        // slaveN lines (masters only)
	MasterLinkDownSince time.Duration // master_link_down_since_seconds, 0 if absent
	MasterHost          string        // master_host (replicas)
	MasterPort          int           // master_port (replicas)
	MasterLinkUp        bool          // master_link_status:up (replicas)
	HasPriority         bool          // whether slave_priority was present
	Priority            int           // slave_priority / replica_priority
	ReplOffset          int64         // slave_repl_offset
	HasAnnounced        bool          // whether replica_announced was present
	Announced           bool          // replica_announced
	// AckNeed and AckEligible are a shardnode master's min_replicas_ack
	// and min_replicas_ack_eligible (0 when absent: redis-server, or
	// acknowledgement off): the election rule of ackrule.go.
	AckNeed, AckEligible int
	// AckLease is a shardnode master's min_replicas_ack_sentinel_lease:
	// how long a Sentinel's PING keeps it acknowledging writes (its
	// Sentinel fence; 0 when absent). Parsed for completeness: since the
	// replica freeze the election does not wait for it.
	AckLease time.Duration
}

// ParseInfo extracts the fields the Sentinel uses from an INFO reply.
func ParseInfo(text string) Info {
	var in Info
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimRight(l, "\r")
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		switch {
		case k == "run_id":
			in.RunID = v
		case k == "role":
			switch v {
			case "master":
				in.Role = RoleMaster
			case "slave":
				in.Role = RoleReplica
			}
		case strings.HasPrefix(k, "slave") && len(k) > 5 && k[5] >= '0' && k[5] <= '9':
			if a, ok := parseReplicaLine(v); ok {
				in.Replicas = append(in.Replicas, a)
			}
		case k == "master_link_down_since_seconds":
			n, _ := strconv.ParseInt(v, 10, 64)
			in.MasterLinkDownSince = time.Duration(n) * time.Second
		case k == "master_host":
			in.MasterHost = v
		case k == "master_port":
			in.MasterPort, _ = strconv.Atoi(v)
		case k == "master_link_status":
			in.MasterLinkUp = strings.EqualFold(v, "up")
		case k == "slave_priority" || k == "replica_priority":
			in.Priority, _ = strconv.Atoi(v)
			in.HasPriority = true
		case k == "slave_repl_offset":
			in.ReplOffset, _ = strconv.ParseInt(v, 10, 64)
		case k == "min_replicas_ack":
			in.AckNeed, _ = strconv.Atoi(v)
		case k == "min_replicas_ack_eligible":
			in.AckEligible, _ = strconv.Atoi(v)
		case k == "min_replicas_ack_sentinel_lease":
			ms, _ := strconv.Atoi(v)
			in.AckLease = time.Duration(ms) * time.Millisecond
		case k == "replica_announced":
			in.HasAnnounced = true
			in.Announced = v != "0"
		}
	}
	return in
}

// parseReplicaLine parses "ip=..,port=..,..." or the old "ip,port,state".
func parseReplicaLine(v string) (Addr, bool) {
	var a Addr
	if !strings.Contains(v, "ip=") {
		f := strings.Split(v, ",")
		if len(f) < 3 {
			return a, false
		}
		p, err := strconv.Atoi(f[1])
		return Addr{f[0], p}, err == nil
	}
	for _, f := range strings.Split(v, ",") {
		if ip, ok := strings.CutPrefix(f, "ip="); ok {
			a.IP = ip
		} else if p, ok := strings.CutPrefix(f, "port="); ok {
			a.Port, _ = strconv.Atoi(p)
		}
	}
	return a, a.IP != "" && a.Port > 0
}
