package node

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/resp"
	"github.com/shardis/shardis/internal/testutil"
)

// The cluster-mode compatibility test: a redis-server cluster and a
// shardnode cluster, built the same way (3 masters, a replica of the
// first, slot 16383 unassigned), get the lines of
// testdata/compat_cluster/*.txt on raw connections, and their replies
// must be byte-identical once node ids and ports are written as names
// ($M0, $P0 ...). The corpus format is described at the top of the file.

type clusterCorpusLine struct {
	no     int
	text   string
	label  string
	args   []string
	ignore bool
	wait   string // ~label text: wait until CLUSTER INFO holds text
}

func loadClusterCorpus(t *testing.T, path string) []clusterCorpusLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []clusterCorpusLine
	for i, raw := range strings.Split(string(data), "\n") {
		text := strings.TrimSpace(raw)
		if text == "" || text[0] == '#' {
			continue
		}
		l := clusterCorpusLine{no: i + 1, text: text}
		rest := text
		switch rest[0] {
		case '!':
			l.ignore, rest = true, rest[1:]
		case '~':
			label, cond, _ := strings.Cut(rest[1:], " ")
			l.label, l.wait = label, cond
			out = append(out, l)
			continue
		}
		label, cmd, ok := strings.Cut(rest, " ")
		if !ok {
			t.Fatalf("%s:%d: no command in %q", path, l.no, text)
		}
		args, ok := resp.SplitArgs([]byte(cmd))
		if !ok || len(args) == 0 {
			t.Fatalf("%s:%d: cannot parse %q", path, l.no, text)
		}
		l.label = label
		for _, a := range args {
			l.args = append(l.args, string(a))
		}
		out = append(out, l)
	}
	return out
}

// corpusCluster is one cluster as the corpus sees it.
type corpusCluster struct {
	nodes map[string]*clNode // by label
	names map[string]string  // $M0 -> id
	repl  *strings.Replacer  // ids and ports -> names
}

func newCorpusCluster(t *testing.T, m []*clNode, r0 *clNode) *corpusCluster {
	cc := &corpusCluster{nodes: map[string]*clNode{"m0": m[0], "m1": m[1], "m2": m[2], "r0": r0}, names: map[string]string{}}
	var pairs []string
	for label, n := range cc.nodes {
		name := "$" + strings.ToUpper(label)
		id := n.id(t)
		cc.names[name] = id
		pairs = append(pairs, id, name,
			":"+strconv.Itoa(n.port), ":$P"+strings.ToUpper(label[:1])+label[1:],
			":"+strconv.Itoa(n.cport), ":$C"+strings.ToUpper(label[:1])+label[1:],
			"@"+strconv.Itoa(n.cport), "@$C"+strings.ToUpper(label[:1])+label[1:])
	}
	cc.repl = strings.NewReplacer(pairs...)
	return cc
}

// run plays the corpus and returns each line's normalised replies.
func (cc *corpusCluster) run(t *testing.T, lines []clusterCorpusLine) [][]byte {
	t.Helper()
	conns := map[string]*corpusConn{}
	conn := func(label string) *corpusConn {
		if c := conns[label]; c != nil {
			return c
		}
		n := cc.nodes[strings.TrimSuffix(label, "b")] // m0b: a second connection to m0
		if n == nil {
			t.Fatalf("unknown node label %q", label)
		}
		nc, err := net.DialTimeout("tcp", n.addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		c := &corpusConn{nc: nc, br: bufio.NewReader(nc)}
		conns[label] = c
		return c
	}
	out := make([][]byte, len(lines))
	for i, l := range lines {
		if l.wait == "push" {
			// The next reply on the connection, however long it takes to
			// arrive (a message relayed by the bus).
			c := conn(l.label)
			_ = c.nc.SetDeadline(time.Now().Add(10 * time.Second))
			r, err := readReplyRaw(c.br)
			if err != nil {
				t.Fatalf("line %d: waiting for a push: %v", l.no, err)
			}
			out[i] = []byte(cc.repl.Replace(string(r)))
			continue
		}
		if l.wait != "" {
			n := cc.nodes[l.label]
			testutil.WaitFor(t, clusterTimeout, n.kind+" "+l.label+" CLUSTER INFO to hold "+l.wait, func() bool {
				s, err := n.rc.Do(context.Background(), "cluster", "info").Text()
				return err == nil && strings.Contains(s, l.wait)
			})
			continue
		}
		args := make([][]byte, len(l.args))
		for j, a := range l.args {
			if id, ok := cc.names[a]; ok {
				a = id
			}
			args[j] = []byte(a)
		}
		out[i] = []byte(cc.repl.Replace(string(conn(l.label).roundTrip(t, args, i))))
	}
	return out
}

var replOffsetField = regexp.MustCompile(`(\$18\r\nreplication-offset\r\n):\d+`)

// shards returns m0's CLUSTER SHARDS reply, normalised: ids and ports as
// names, replication offsets as 0, and the shards sorted (Redis lists
// them in its node table's hash order).
func (cc *corpusCluster) shards(t *testing.T, proto int) string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", cc.nodes["m0"].addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(nc)
	if proto == 3 {
		nc.Write(resp.AppendCommandStrings(nil, "HELLO", "3"))
		if _, err := readReplyRaw(br); err != nil {
			t.Fatal(err)
		}
	}
	nc.Write(resp.AppendCommandStrings(nil, "CLUSTER", "SHARDS"))
	raw, err := readReplyRaw(br)
	if err != nil {
		t.Fatalf("%s CLUSTER SHARDS (RESP%d): %v after %q", cc.nodes["m0"].kind, proto, err, raw)
	}
	s := replOffsetField.ReplaceAllString(cc.repl.Replace(string(raw)), "${1}:0")
	head := "*4\r\n$5\r\nslots\r\n"
	if proto == 3 {
		head = "%2\r\n$5\r\nslots\r\n"
	}
	parts := strings.Split(s, head)
	sort.Strings(parts[1:])
	return strings.Join(parts, head)
}

var (
	intValue   = regexp.MustCompile(`:\d+\r\n`)
	linkEvents = regexp.MustCompile(`(\$6\r\nevents\r\n)\$\d\r\nr?w?\r\n`)
)

// links returns m0's CLUSTER LINKS reply with its numbers as 0 and its
// events as "r", links sorted: the names, their order and the types.
func (cc *corpusCluster) links(t *testing.T, proto int) string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", cc.nodes["m0"].addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(nc)
	nc.Write(resp.AppendCommandStrings(nil, "HELLO", strconv.Itoa(proto)))
	if _, err := readReplyRaw(br); err != nil {
		t.Fatal(err)
	}
	nc.Write(resp.AppendCommandStrings(nil, "CLUSTER", "LINKS"))
	raw, err := readReplyRaw(br)
	if err != nil {
		t.Fatal(err)
	}
	s := cc.repl.Replace(string(raw))
	s = linkEvents.ReplaceAllString(intValue.ReplaceAllString(s, ":0\r\n"), "${1}$$1\r\nr\r\n")
	head := "*12\r\n$9\r\ndirection\r\n"
	if proto == 3 {
		head = "%6\r\n$9\r\ndirection\r\n"
	}
	parts := strings.Split(s, head)
	sort.Strings(parts[1:])
	return strings.Join(parts, head)
}

// textReply returns m0's CLUSTER NODES, REPLICAS or INFO normalised:
// node lines sorted (Redis prints its node table in hash order) with
// their ping and pong times as 0, INFO without its message counters.
func (cc *corpusCluster) textReply(t *testing.T, cmd []string) string {
	t.Helper()
	args := make([]any, len(cmd))
	for i, a := range cmd {
		if id, ok := cc.names[a]; ok {
			a = id
		}
		args[i] = a
	}
	v, err := cc.nodes["m0"].rc.Do(context.Background(), args...).Result()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	switch v := v.(type) {
	case string:
		lines = strings.Split(strings.TrimRight(v, "\r\n"), "\n")
	case []any:
		for _, l := range v {
			lines = append(lines, l.(string))
		}
	}
	var out []string
	for _, l := range lines {
		l = strings.TrimSuffix(l, "\r")
		if strings.HasPrefix(l, "cluster_stats_messages_") {
			continue
		}
		if f := strings.Fields(l); len(f) >= 8 && len(f[0]) == 40 {
			f[4], f[5] = "0", "0"
			l = strings.Join(f, " ")
		}
		out = append(out, cc.repl.Replace(l))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// waitReplicaInSlots waits until m0's CLUSTER SLOTS lists r0 for its
// range (the replica's offset has reached m0 by gossip).
func waitReplicaInSlots(t *testing.T, m0 *clNode) {
	t.Helper()
	testutil.WaitFor(t, clusterTimeout, m0.kind+" CLUSTER SLOTS to show the replica", func() bool {
		slots, err := m0.rc.ClusterSlots(context.Background()).Result()
		if err != nil {
			return false
		}
		for _, s := range slots {
			if s.Start == 0 {
				return len(s.Nodes) == 2
			}
		}
		return false
	})
}

func TestClusterCompatWithRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two clusters")
	}
	needBinary(t, "redis-server")
	path := "testdata/compat_cluster/cluster.txt"
	lines := loadClusterCorpus(t, path)
	opts := []string{"cluster-require-full-coverage", "no"}

	var rm, sm []*clNode
	for i := 0; i < 3; i++ {
		rm = append(rm, startRedisNode(t, opts...))
		sm = append(sm, startShardNode(t, 0, 0, "", opts...))
	}
	rr, sr := startRedisNode(t, opts...), startShardNode(t, 0, 0, "", opts...)
	buildCluster(t, rm, []*clNode{rr}, true)
	buildCluster(t, sm, []*clNode{sr}, true)
	// The corpus writes on m0 and reads on r0 after WAIT: the replica
	// must have synced, and m0 must list it in CLUSTER SLOTS.
	for _, m := range []*clNode{rm[0], sm[0]} {
		m.do(t, "set", "sync-probe", "1")
		m.do(t, "del", "sync-probe")
	}
	waitReplicaInSlots(t, rm[0])
	waitReplicaInSlots(t, sm[0])

	rc, sc := newCorpusCluster(t, rm, rr), newCorpusCluster(t, sm, sr)
	for _, proto := range []int{2, 3} {
		w, g := rc.shards(t, proto), sc.shards(t, proto)
		if w != g {
			t.Errorf("CLUSTER SHARDS (RESP%d) differs:\n redis:     %q\n shardnode: %q", proto, w, g)
		}
	}
	for _, cmd := range [][]string{{"cluster", "nodes"}, {"cluster", "replicas", "$M0"}, {"cluster", "info"}} {
		w, g := rc.textReply(t, cmd), sc.textReply(t, cmd)
		if w != g {
			t.Errorf("%s differs:\n redis:\n%s\n shardnode:\n%s", strings.Join(cmd, " "), w, g)
		}
	}
	for _, m := range []*clNode{rm[0], sm[0]} {
		testutil.WaitFor(t, clusterTimeout, m.kind+" m0 to hold two links per peer", func() bool {
			l, err := m.rc.ClusterLinks(context.Background()).Result()
			return err == nil && len(l) == 6
		})
	}
	for _, proto := range []int{2, 3} {
		w, g := rc.links(t, proto), sc.links(t, proto)
		if w != g {
			t.Errorf("CLUSTER LINKS (RESP%d) differs:\n redis:     %q\n shardnode: %q", proto, w, g)
		}
	}
	want := rc.run(t, lines)
	got := sc.run(t, lines)
	same := 0
	for i, l := range lines {
		if (l.wait != "" && l.wait != "push") || l.ignore {
			continue
		}
		if !bytes.Equal(want[i], got[i]) {
			t.Errorf("%s:%d %s\n redis:     %q\n shardnode: %q", path, l.no, l.text, want[i], got[i])
		} else {
			same++
		}
	}
	t.Logf("%d lines byte-identical", same)
}
