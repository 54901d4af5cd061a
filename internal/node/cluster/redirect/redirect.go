// Package redirect is cluster mode's request routing decision: Redis 7.0's
// getNodeByQuery and clusterRedirectClient as pure functions of the
// routing table (cluster.Routing), the slots of a command's keys and the
// client's flags. It answers whether this node serves a command, or which
// error (MOVED, ASK, TRYAGAIN, CROSSSLOT, CLUSTERDOWN) it replies instead.
//
// The node feeds a Query the keys of a command (and of the commands queued
// in MULTI for EXEC), reports for each key of a migrating or importing
// slot whether it exists, and calls Decide. Nothing here allocates or
// calls through an interface: the check runs before every command in
// cluster mode.
package redirect

import (
	"strconv"

	"github.com/shardis/shardis/internal/consistent"
	"github.com/shardis/shardis/internal/node/cluster"
)

// Redirection errors, Redis 7.0's texts (clusterRedirectClient).
const (
	ErrCrossSlot          = "CROSSSLOT Keys in request don't hash to the same slot"
	ErrTryAgain           = "TRYAGAIN Multiple keys request during rehashing of slot"
	ErrClusterDown        = "CLUSTERDOWN The cluster is down"
	ErrClusterDownRO      = "CLUSTERDOWN The cluster is down and only accepts read commands"
	ErrClusterDownUnbound = "CLUSTERDOWN Hash slot not served"
)

// Outcome is what Decide concludes.
type Outcome uint8

const (
	// Serve: this node runs the command.
	Serve Outcome = iota
	// Refuse: the command is answered with an error text.
	Refuse
	// Moved: the command is answered with -MOVED to a node.
	Moved
	// Ask: the command is answered with -ASK to a node.
	Ask
)

// Query accumulates what getNodeByQuery learns from a command's keys. The
// zero Query is not ready: start from NewQuery.
type Query struct {
	// RT is the routing the keys are looked up in.
	RT *cluster.Routing
	// Slot is the first key's slot; Owner its owner's index in RT.Nodes
	// (-1 before the first key).
	Slot  int
	Owner int32
	// HaveKeys: at least one key was fed; MultipleKeys: a key other than
	// the first was.
	HaveKeys, MultipleKeys bool
	// Migrating: the slot is mine and MIGRATING; Importing: it is
	// IMPORTING here.
	Migrating, Importing bool
	// ShardPubSub: the command is a shard pub/sub command, whose
	// "keys" are channels (never looked up in the keyspace).
	ShardPubSub bool
	// MissingKeys and ExistingKeys count the keys of a migrating or
	// importing slot by whether they are in the keyspace (Exists).
	MissingKeys, ExistingKeys int
	firstKey                  string
}

// NewQuery starts a query on rt.
func NewQuery(rt *cluster.Routing, shardPubSub bool) Query {
	return Query{RT: rt, Owner: -1, ShardPubSub: shardPubSub}
}

// Key feeds one key of the request (the node passes its argument's bytes
// without copying; Query keeps the first key until the decision). It
// returns the error to reply at once ("" for none) and whether the caller
// must report the key's existence with Exists (the slot is migrating or
// importing).
func (q *Query) Key(key string) (msg string, checkExists bool) {
	ks := consistent.KeySlot(key)
	rt := q.RT
	if !q.HaveKeys {
		q.HaveKeys, q.firstKey, q.Slot = true, key, ks
		q.Owner = rt.Owner(ks)
		if q.Owner < 0 {
			return ErrClusterDownUnbound, false
		}
		if q.Owner == rt.Me && rt.Migrating(ks) >= 0 {
			q.Migrating = true
		} else if rt.Importing(ks) >= 0 {
			q.Importing = true
		}
	} else if key != q.firstKey {
		if ks != q.Slot {
			return ErrCrossSlot, false
		}
		q.MultipleKeys = true
	}
	return "", (q.Migrating || q.Importing) && !q.ShardPubSub
}

// Exists counts a key Key asked about: present in the keyspace or not.
func (q *Query) Exists(present bool) {
	if present {
		q.ExistingKeys++
	} else {
		q.MissingKeys++
	}
}

// Request is what Decide needs to know of the command and the client.
type Request struct {
	// Write: the command (or a command queued for EXEC, or the script
	// EVAL runs) writes.
	Write bool
	// Asking: the client sent ASKING; ReadOnly: it sent READONLY.
	Asking, ReadOnly bool
	// Name is the command's name in lower case: MIGRATE is served on a
	// migrating or importing slot, RESTORE-ASKING as if ASKING was sent.
	Name string
	// AllowReadsWhenDown and AllowPubsubShardWhenDown are the
	// cluster-allow-reads-when-down and
	// cluster-allow-pubsubshard-when-down directives; they are read only
	// when the routing's state is not ok.
	AllowReadsWhenDown, AllowPubsubShardWhenDown bool
}

// Decide is clusterRedirectClient's choice once every key was fed: the
// outcome, the error text for Refuse, and for Moved and Ask the target's
// index in RT.Nodes (render it with Message).
func (q *Query) Decide(r Request) (Outcome, string, int32) {
	rt := q.RT
	if !q.HaveKeys {
		return Serve, "", -1
	}
	if rt.State != cluster.ClusterOK {
		switch {
		case q.ShardPubSub:
			if !r.AllowPubsubShardWhenDown {
				return Refuse, ErrClusterDown, -1
			}
		case !r.AllowReadsWhenDown:
			return Refuse, ErrClusterDown, -1
		case r.Write:
			return Refuse, ErrClusterDownRO, -1
		}
	}
	if (q.Migrating || q.Importing) && r.Name == "migrate" {
		return Serve, "", -1
	}
	if q.Migrating && q.MissingKeys > 0 {
		if q.ExistingKeys > 0 {
			return Refuse, ErrTryAgain, -1
		}
		return Ask, "", rt.Migrating(q.Slot)
	}
	if q.Importing && (r.Asking || r.Name == "restore-asking") {
		if q.MultipleKeys && q.MissingKeys > 0 {
			return Refuse, ErrTryAgain, -1
		}
		return Serve, "", -1
	}
	if (r.ReadOnly || q.ShardPubSub) && !r.Write && rt.MyMaster >= 0 && rt.MyMaster == q.Owner {
		return Serve, "", -1
	}
	if q.Owner != rt.Me {
		return Moved, "", q.Owner
	}
	return Serve, "", -1
}

// Blocked is clusterRedirectBlockedClientIfNeeded's choice for a client
// blocked on a key of slot, when the routing changes: Serve to keep it
// blocked (the slot is served or imported here), else the error to
// unblock it with. readOnlyRead says the client sent READONLY and its
// command does not write (a replica then serves its master's slots).
func Blocked(rt *cluster.Routing, slot int, readOnlyRead bool) (Outcome, string, int32) {
	owner := rt.Owner(slot)
	if owner >= 0 && readOnlyRead && rt.MyMaster >= 0 && rt.MyMaster == owner {
		owner = rt.Me
	}
	switch {
	case rt.State != cluster.ClusterOK:
		return Refuse, ErrClusterDown, -1
	case owner == rt.Me || rt.Importing(slot) >= 0:
		return Serve, "", -1
	case owner < 0:
		return Refuse, ErrClusterDownUnbound, -1
	}
	return Moved, "", owner
}

// Message renders "MOVED slot endpoint:port" or "ASK slot endpoint:port"
// (kind is "MOVED" or "ASK") to node to of rt, with the endpoint
// cluster-preferred-endpoint-type (endpointType) asks for.
func Message(kind string, slot int, rt *cluster.Routing, to int32, endpointType string) string {
	n := rt.Nodes[to]
	return kind + " " + strconv.Itoa(slot) + " " + PreferredEndpoint(n.IP, n.Hostname, endpointType) + ":" + strconv.Itoa(n.Port)
}

// PreferredEndpoint is Redis's getPreferredEndpoint for
// cluster-preferred-endpoint-type typ: the IP; the hostname, or "?" for a
// node without one; or "" for unknown-endpoint (the client is to use the
// address it sent the command to: "-MOVED 3999 :6381").
func PreferredEndpoint(ip, hostname, typ string) string {
	switch typ {
	case "hostname":
		if hostname != "" {
			return hostname
		}
		return "?"
	case "unknown-endpoint":
		return ""
	}
	return ip
}
