package node

import "unsafe"

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
// (perf_prefetch_on.go) as they are races by design, and on other
// architectures than amd64, whose weaker memory order could show an
// entry's pointer before its contents.

// bucketView is a shard's bucket array as prefetching sees it.
type bucketView struct {
	base unsafe.Pointer // &buckets[0]
	mask uint64
}

// setBuckets replaces the shard's bucket array. The shard must be locked.
func (s *shard) setBuckets(nb []*entry) {
	s.buckets = nb
	if len(nb) == 0 {
		s.view.Store(nil)
		return
	}
	s.view.Store(&bucketView{base: unsafe.Pointer(&nb[0]), mask: uint64(len(nb) - 1)})
}

// maxBatch bounds the requests parsed ahead of execution, maxPrefetch the
// keys prefetched for them.
const (
	maxBatch    = 32
	maxPrefetch = 64
)

// batchReq is one parsed request of a batch: its arguments (pointing into
// the reader's buffer, valid until the next Fill) and its command.
type batchReq struct {
	args [][]byte
	cmd  *command
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
	if !prefetchEnabled {
		return
	}
	db := c.srv.dbs[c.db]
	var slots [maxPrefetch]unsafe.Pointer
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
			key := bstr(r.args[k])
			v := db.shards[shardOf(key)].view.Load()
			if v == nil {
				continue
			}
			i := keyHash(key) & v.mask
			slots[n] = unsafe.Add(v.base, uintptr(i)*unsafe.Sizeof((*entry)(nil)))
			n++
		}
	}
	if n < 2 {
		return
	}
	var heads [maxPrefetch]*entry
	for i := 0; i < n; i++ {
		heads[i] = loadSlot(slots[i])
	}
	var sink uint32
	for i := 0; i < n; i++ {
		if e := heads[i]; e != nil {
			sink += e.hash
			if len(e.key) > 0 {
				sink += uint32(*unsafe.StringData(e.key))
			}
		}
	}
	c.prefetchSink = sink // keeps the loads from being optimised away
}
