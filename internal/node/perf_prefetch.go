package node

import (
	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/value"
)

// Pipeline prefetching.
//
// Most of a pipelined GET or SET's CPU time on a large keyspace is two
// cache (and TLB) misses in shard.find: the bucket slot, then the entry. A
// command waits for both before the next command starts, so a batch of 16
// commands pays 32 misses one after another. When a client's buffer holds
// several complete requests, serve parses a run of them first (batch) and
// touches their keys' bucket slots, then their first entries, in two tight
// loops of independent loads, so the misses of the whole batch overlap;
// the commands then run as before and find their data in cache. Redis 8
// does the same for its I/O threads' batches.
//
// The loads are hints read without the shard's lock. They are memory safe:
// a shard publishes its bucket array with its mask (bucketView) atomically,
// a racy read of a bucket slot yields some entry pointer that was stored
// there (pointer-sized reads do not tear), and an entry stays allocated as
// long as a pointer to it is held. What is read only warms the cache; it
// never decides anything. Under the race detector the loads are skipped
// (keyspace/prefetch_on.go) as they are races by design, and on other
// architectures than amd64, whose weaker memory order could show an
// entry's pointer before its contents.

// maxBatch bounds the requests parsed ahead of execution, maxPrefetch the
// keys prefetched for them.
const (
	maxBatch    = 32
	maxPrefetch = value.MaxPrefetch
)

// batchReq is one parsed request of a batch: its arguments (pointing into
// the reader's buffer, valid until the next Fill) and its command.
type batchReq struct {
	args [][]byte
	cmd  *command
	keep argMask // request.keep
}

// batchable reports whether requests after this one may be parsed before
// it runs: a command with keys never changes the connection's database,
// authentication or reader limits, which parsing ahead depends on.
func batchable(cmd *command) bool {
	return cmd != nil && cmd.first > 0 && cmd.keys == nil && cmd.subs == nil
}

// multiKey reports whether a request of cmd with n arguments has several
// keys (MSET, MGET, DEL k1 k2 ...), worth prefetching on its own.
func multiKey(cmd *command, n int) bool {
	return cmd.last < 0 && n > cmd.first+max(cmd.step, 1) || cmd.last > cmd.first
}

// prefetchBatch warms the cache lines the batch's keys will be looked up
// in: first every key's bucket slot, then every slot's first entry and its
// key bytes. Keys are taken from the commands' first/last/step metadata, up
// to maxPrefetch of them.
func (c *Client) prefetchBatch(reqs []batchReq) {
	if !keyspace.PrefetchEnabled {
		return
	}
	var keys [maxPrefetch]string
	n := 0
	for i := range reqs {
		r := &reqs[i]
		if r.cmd == nil || r.cmd.first <= 0 || r.cmd.first >= len(r.args) {
			continue
		}
		last, step := r.cmd.last, max(r.cmd.step, 1)
		if last < 0 {
			last += len(r.args)
		}
		last = min(last, len(r.args)-1)
		for k := r.cmd.first; k <= last && n < maxPrefetch; k += step {
			keys[n] = bstr(r.args[k])
			n++
		}
	}
	c.prefetchMembers(reqs)
	if n < 2 {
		return
	}
	// The sum keeps the loads from being optimised away.
	c.prefetchSink = c.srv.dbs[c.db].PrefetchKeys(keys[:n])
}

// Member prefetching.
//
// A pipeline of HSET, SADD, ZADD, SISMEMBER ... on one large collection
// pays, per command, the same chain of misses inside the collection's
// hash table: the bucket slot, the node, the member's bytes. For a run of
// consecutive requests on the same key, prefetchMembers looks the key up
// under its shard's lock (the value's type and table are only safe to read
// there) and touches every member's bucket slot, then every slot's first
// node and the first byte of its member, in loops of independent loads, so
// those misses overlap too. As for keys, nothing read decides anything.

// memberSpec locates a command's members: args[from], args[from+step], ...
// (at most max of them when max > 0), or, with fromEnd, args[len-1],
// args[len-1-step], ... down to args[from] (ZADD's score/member pairs end
// with the member, whatever options precede them). step 0: no members.
type memberSpec struct {
	from, step, max int8
	fromEnd         bool
}

// memberSpecs are the commands whose members are prefetched; all have
// their single key at position 1.
var memberSpecs = map[string]memberSpec{
	"hset": {from: 2, step: 2}, "hmset": {from: 2, step: 2},
	"hsetnx": {from: 2, step: 1, max: 1}, "hget": {from: 2, step: 1, max: 1},
	"hexists": {from: 2, step: 1, max: 1}, "hstrlen": {from: 2, step: 1, max: 1},
	"hincrby": {from: 2, step: 1, max: 1}, "hincrbyfloat": {from: 2, step: 1, max: 1},
	"hmget": {from: 2, step: 1}, "hdel": {from: 2, step: 1},
	"sadd": {from: 2, step: 1}, "srem": {from: 2, step: 1},
	"sismember": {from: 2, step: 1, max: 1}, "smismember": {from: 2, step: 1},
	"zscore": {from: 2, step: 1, max: 1}, "zmscore": {from: 2, step: 1},
	"zrem": {from: 2, step: 1}, "zincrby": {from: 3, step: 1, max: 1},
	"zrank": {from: 2, step: 1, max: 1}, "zrevrank": {from: 2, step: 1, max: 1},
	"zadd": {from: 3, step: 2, fromEnd: true},
}

// setMemberSpecs copies memberSpecs into the table.
func setMemberSpecs(t *commandTable) {
	for name, spec := range memberSpecs {
		cmd := t.cmds[name]
		if cmd == nil || cmd.first != 1 {
			panic("node: member prefetch for unknown or multi-key command " + name)
		}
		cmd.members = spec
	}
}

// hasMembers reports whether r's members can be prefetched.
func (r *batchReq) hasMembers() bool {
	return r.cmd != nil && r.cmd.members.step > 0 && len(r.args) > int(r.cmd.members.from)
}

// appendMembers appends r's members to ms, up to maxPrefetch in all.
func (r *batchReq) appendMembers(ms [][]byte) [][]byte {
	sp := r.cmd.members
	from, step := int(sp.from), int(sp.step)
	n := 0
	if sp.fromEnd {
		for i := len(r.args) - 1; i >= from && len(ms) < maxPrefetch; i -= step {
			ms = append(ms, r.args[i])
		}
		return ms
	}
	for i := from; i < len(r.args) && len(ms) < maxPrefetch; i += step {
		ms = append(ms, r.args[i])
		if n++; sp.max > 0 && n == int(sp.max) {
			break
		}
	}
	return ms
}

// prefetchMembers prefetches the members of runs of requests on one key.
func (c *Client) prefetchMembers(reqs []batchReq) {
	var buf [maxPrefetch][]byte
	for i := 0; i < len(reqs); {
		if !reqs[i].hasMembers() {
			i++
			continue
		}
		key := reqs[i].args[1]
		ms := reqs[i].appendMembers(buf[:0])
		j := i + 1
		for ; j < len(reqs) && reqs[j].hasMembers() && string(reqs[j].args[1]) == string(key); j++ {
			ms = reqs[j].appendMembers(ms)
		}
		if len(ms) >= 2 {
			c.prefetchSink += c.srv.dbs[c.db].PrefetchMembers(bstr(key), ms)
		}
		i = j
	}
}
