// Package reply shapes the replies of the CLUSTER command family from the
// cluster machine's view (cluster.SlotRange, cluster.Shard,
// cluster.LinkInfo) and parses the argument grammars of its subcommands:
// pure data in, RESP out through a small Writer the node implements over
// its connection. None of it runs on a request's hot path.
package reply

import (
	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/cluster/redirect"
	"github.com/shardis/shardis/internal/node/cluster/runner"
)

// Writer appends RESP to a client's reply, in the client's protocol
// (MapLen is a flat array of 2n elements in RESP2).
type Writer interface {
	ArrayLen(n int)
	MapLen(n int)
	Int(n int64)
	Bulk(s string)
	Null()
}

// Slots writes CLUSTER SLOTS: per slot range its start, end, master and
// replicas, each node as Node writes it.
func Slots(w Writer, ranges []cluster.SlotRange, endpointType string) {
	w.ArrayLen(len(ranges))
	for _, r := range ranges {
		w.ArrayLen(3 + len(r.Replicas))
		w.Int(int64(r.Start))
		w.Int(int64(r.End))
		Node(w, r.Master, endpointType)
		for _, rep := range r.Replicas {
			Node(w, rep, endpointType)
		}
	}
}

// Node is Redis's addNodeToNodeReply: endpoint, port, id and a map of the
// networking metadata that is not the preferred endpoint.
func Node(w Writer, n cluster.NodeInfo, typ string) {
	w.ArrayLen(4)
	if typ == "unknown-endpoint" {
		w.Null()
	} else {
		w.Bulk(redirect.PreferredEndpoint(n.IP, n.Hostname, typ))
	}
	w.Int(int64(n.Port))
	w.Bulk(n.ID)
	length := 0
	if typ != "ip" {
		length++
	}
	if typ != "hostname" && n.Hostname != "" {
		length++
	}
	w.MapLen(length)
	if typ != "ip" {
		w.Bulk("ip")
		w.Bulk(n.IP)
	}
	if typ != "hostname" && n.Hostname != "" {
		w.Bulk("hostname")
		w.Bulk(n.Hostname)
	}
}

// Shards writes CLUSTER SHARDS: per master, a map of its slot ranges
// (flat start, end pairs) and its nodes, master first, each as ShardNode
// writes it.
func Shards(w Writer, shards []cluster.Shard, endpointType string) {
	w.ArrayLen(len(shards))
	for _, sh := range shards {
		w.MapLen(2)
		w.Bulk("slots")
		w.ArrayLen(2 * len(sh.Slots))
		for _, r := range sh.Slots {
			w.Int(int64(r[0]))
			w.Int(int64(r[1]))
		}
		w.Bulk("nodes")
		w.ArrayLen(len(sh.Nodes))
		for _, n := range sh.Nodes {
			ShardNode(w, n, endpointType)
		}
	}
}

// ShardNode is Redis's addNodeDetailsToShardReply (no TLS: the port is
// the plaintext one and tls-port is never shown), in Redis's key order.
func ShardNode(w Writer, n cluster.ShardNode, endpointType string) {
	fields := 6 // id, ip, endpoint, role, replication-offset, health
	if n.Port != 0 {
		fields++
	}
	if n.Hostname != "" {
		fields++
	}
	w.MapLen(fields)
	w.Bulk("id")
	w.Bulk(n.ID)
	if n.Port != 0 {
		w.Bulk("port")
		w.Int(int64(n.Port))
	}
	w.Bulk("ip")
	w.Bulk(n.IP)
	w.Bulk("endpoint")
	w.Bulk(redirect.PreferredEndpoint(n.IP, n.Hostname, endpointType))
	if n.Hostname != "" {
		w.Bulk("hostname")
		w.Bulk(n.Hostname)
	}
	w.Bulk("role")
	w.Bulk(n.Role)
	w.Bulk("replication-offset")
	w.Int(n.ReplOffset)
	w.Bulk("health")
	w.Bulk(n.Health)
}

// Links writes CLUSTER LINKS: every link bound to a node, a map each. The
// machine knows the links (links); the runner owns their send buffers
// (bufs).
func Links(w Writer, links []cluster.LinkInfo, bufs map[cluster.LinkID]runner.LinkBuffer) {
	w.ArrayLen(len(links))
	for _, l := range links {
		b := bufs[l.ID]
		// A connected link always reads; it writes while its buffer
		// holds data (Redis installs the write handler then); a link
		// still connecting has neither.
		events := ""
		if b.Connected {
			events = "r"
			if b.Used > 0 {
				events = "rw"
			}
		}
		w.MapLen(6)
		w.Bulk("direction")
		w.Bulk(l.Direction)
		w.Bulk("node")
		w.Bulk(l.Node)
		w.Bulk("create-time")
		w.Int(l.CreateTime)
		w.Bulk("events")
		w.Bulk(events)
		w.Bulk("send-buffer-allocated")
		w.Int(int64(b.Allocated))
		w.Bulk("send-buffer-used")
		w.Int(int64(b.Used))
	}
}

// Fields writes a flat list of name, value pairs as a map (CLUSTER
// MIGRATION STATUS's task entries).
func Fields(w Writer, fields []string) {
	w.MapLen(len(fields) / 2)
	for _, f := range fields {
		w.Bulk(f)
	}
}
