package node

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/keyopts"
	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/migrate"
	"github.com/shardis/shardis/internal/node/persist"
	"github.com/shardis/shardis/internal/rdb"
)

// DUMP, RESTORE and MIGRATE, with Redis's DUMP payload (value in RDB
// encoding + 2-byte RDB version + CRC64), so payloads move freely between
// redis-server and shardnode.

func registerDumpCommands(t *commandTable) {
	t.add(&command{name: "dump", arity: 2, flags: flagReadOnly, first: 1, last: 1, step: 1, fn: cmdDump, group: "keyspace", since: "2.6.0"})
	t.add(&command{name: "restore", arity: -4, flags: flagWrite | flagDenyOOM, first: 1, last: 1, step: 1, fn: cmdRestore, prelock: restorePrelock, group: "keyspace", since: "2.6.0"})
	t.add(&command{name: "restore-asking", arity: -4, flags: flagWrite | flagDenyOOM, first: 1, last: 1, step: 1, fn: cmdRestore, prelock: restorePrelock, group: "server", since: "3.0.0"})
	t.add(&command{name: "migrate", arity: -6, flags: flagWrite, keys: migrate.Keys, fn: cmdMigrate, group: "keyspace", since: "2.6.0"})
}

const errBadPayload = "ERR DUMP payload version or checksum are wrong"

// entryValue converts a live entry (its shard locked) to an rdb.Value
// (persist.EntryValue); MIGRATE and DEBUG OBJECT encode with it.
func entryValue(e *keyspace.Entry) *rdb.Value { return persist.EntryValue(e) }

// rdbLimits are the encoder's thresholds (persist.Limits.RDB).
func (s *Server) rdbLimits() rdb.Limits { return s.persistLimits().RDB() }

// DUMP key
func cmdDump(c *Client, args [][]byte) {
	e := c.curDB().Lookup(string(args[1]), c.now)
	if e == nil {
		c.addNull()
		return
	}
	c.addBulk(persist.Dump(e, c.srv.cfg.Bool(config.DirRdbcompression), c.srv.persistLimits()))
}

// restoreKeepMin is the shortest string RESTORE keeps in its payload
// argument's memory rather than copying, when the argument has a buffer
// of its own (resp.BigArgLen and more, so every such argument qualifies).
const restoreKeepMin = 32 << 10

// restoreWork is RESTORE's arguments parsed and its payload decoded, in
// Redis's order (restoreCommand): the options, then (in cmdRestore, under
// the lock) BUSYKEY, then the TTL, then the payload. Parsing stops at the
// first error, as Redis's does, except that the key's existence is only
// known under the lock: with a BUSYKEY the decoding was for nothing.
type restoreWork struct {
	opts    keyopts.RestoreOptions
	optsErr error // a bad option: the first reply
	ttl     int64
	ttlErr  error           // a bad TTL: after BUSYKEY
	entry   *keyspace.Entry // the decoded value; nil with an error
	dataErr string          // a bad payload: after the TTL's error
}

// restoreDecodeHook, when set, runs with the payload as RESTORE starts
// decoding it (tests hold a decoding RESTORE there, and check whether the
// restored string shares the payload's memory).
var restoreDecodeHook atomic.Pointer[func(payload []byte)]

// parseRestore does restoreWork's parsing and decoding. With keep, a raw
// string of restoreKeepMin bytes or more stays in the payload's memory
// (persist.RestoreKeep).
func parseRestore(c *Client, args [][]byte, keep bool) *restoreWork {
	w := &c.restoreW
	*w = restoreWork{}
	if w.opts, w.optsErr = keyopts.ParseRestore(args[4:]); w.optsErr != nil {
		return w
	}
	if w.ttl, w.ttlErr = keyopts.ParseRestoreTTL(args[2]); w.ttlErr != nil {
		return w
	}
	if h := restoreDecodeHook.Load(); h != nil {
		(*h)(args[3])
	}
	keepMin := 0
	if keep {
		keepMin = restoreKeepMin
	}
	e, err := persist.RestoreKeep(args[3], c.srv.persistLimits(), keepMin)
	switch {
	case errors.Is(err, rdb.ErrBadPayload):
		w.dataErr = errBadPayload
	case err != nil:
		w.dataErr = "ERR Bad data format"
	default:
		w.entry = e
	}
	return w
}

// restorePrelock is RESTORE's prelock step (command.prelock): the payload
// is decoded before the key's shard is locked, so the other keys of the
// shard are served meanwhile. A payload argument the connection's reader
// never writes again (Client.keepArg) keeps its string: a 50 MB value is
// not copied.
func restorePrelock(c *Client, args [][]byte) any {
	return parseRestore(c, args, c.keepArg(3))
}

// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
func cmdRestore(c *Client, args [][]byte) {
	w, _ := c.prepared.(*restoreWork)
	c.prepared = nil
	if w == nil {
		// Inside EXEC or a script: decoded here, under the locks.
		w = parseRestore(c, args, false)
	}
	// The client's restoreW must not keep the entry (a 50 MB value) alive
	// after the command: work on a copy and clear it.
	work := *w
	*w = restoreWork{}
	w = &work
	if w.optsErr != nil {
		c.addError(w.optsErr.Error())
		return
	}
	key := string(args[1])
	db := c.curDB()
	o := w.opts
	if !o.Replace && db.Lookup(key, c.now) != nil {
		c.addError("BUSYKEY Target key name already exists.")
		return
	}
	if w.ttlErr != nil {
		c.addError(w.ttlErr.Error())
		return
	}
	if w.dataErr != "" {
		c.addError(w.dataErr)
		return
	}
	e := w.entry
	deleted := false
	if o.Replace {
		deleted = db.Remove(key) != nil
	}
	ttl, expired := o.ExpireAt(w.ttl, c.now)
	if expired {
		// Already expired: nothing to add; a replaced key is deleted.
		if deleted {
			c.propagateAs([][]byte{[]byte("DEL"), []byte(key)})
			c.keyChanged(notifyGeneric, "del", key)
		}
		c.addOK()
		return
	}
	e.Expire = ttl
	e.LRU = o.LRU(strings.HasSuffix(c.srv.cfg.Get(config.DirMaxmemoryPolicy), "-lfu"), c.srv.lruClock())
	db.Add(key, e)
	if ttl > 0 && !o.AbsTTL {
		// Propagated with an absolute TTL, as Redis 7 does. The
		// propagators encode the arguments before the command ends (and
		// EXEC copies what it propagates), so the payload is not copied.
		prop := make([][]byte, len(args), len(args)+1)
		copy(prop, args)
		prop[2] = []byte(strconv.FormatInt(ttl, 10))
		prop = append(prop, []byte("ABSTTL"))
		c.propagateAs(prop)
	}
	c.keyChanged(notifyGeneric, "restore", key)
	c.addOK()
}

// migrateScratch is the slices a MIGRATE needs per call, kept by its
// client for the next one (a reshard sends thousands of MIGRATEs of 10
// keys on one connection).
type migrateScratch struct {
	items   []migrate.Item
	entries []*keyspace.Entry
	names   []string
	ends    []int
}

// maxScratchKeys bounds the slices a client keeps (a MIGRATE of more keys
// leaves them to the collector).
const maxScratchKeys = 1024

// keep stores the call's slices for the next MIGRATE, cleared, so they
// hold no key, entry or payload.
func (sc *migrateScratch) keep(items []migrate.Item, entries []*keyspace.Entry, names []string, ends []int) {
	if cap(items) > maxScratchKeys {
		*sc = migrateScratch{}
		return
	}
	clear(items[:cap(items)])
	clear(entries[:cap(entries)])
	clear(names[:cap(names)])
	sc.items, sc.entries, sc.names, sc.ends = items[:0], entries[:0], names[:0], ends[:0]
}

// dumpBufs holds MIGRATE's payload buffers for reuse; one that grew past
// maxDumpBuf (big keys) is dropped instead of kept.
var dumpBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxDumpBuf = 256 << 10

// bigDumpMin is the size from which MIGRATE sends a string from its entry
// in parts instead of dumping it into the payload buffer (the request
// writes parts of this size or more without copying them).
const bigDumpMin = 64 << 10

// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password] [AUTH2 username password] [KEYS key [key ...]]
//
// The keys are serialised and sent as one pipeline of RESTORE (or, in
// cluster mode, RESTORE-ASKING) commands on a cached connection, then
// deleted once the target acknowledged them, as Redis does. Outside MULTI
// the transfer runs without the keys' shard locks, under key guards
// (migrate_guard.go): commands on the moving keys wait, the other keys of
// their shards are served.
func cmdMigrate(c *Client, args [][]byte) {
	o, err := migrate.Parse(args)
	if err != nil {
		c.addError(err.Error())
		return
	}
	db := c.curDB()
	// The per-call slices come from the client's scratch and go back to it
	// (holding nothing) when the command ends, after the guards' release.
	sc := &c.migW
	items, entries := sc.items[:0], sc.entries[:0] // entries: items' entries
	var names []string
	var ends []int
	defer func() { sc.keep(items, entries, names, ends) }()
	for _, k := range o.Keys {
		key := string(k)
		e := db.Lookup(key, c.now)
		if e == nil || slices.ContainsFunc(items, func(it migrate.Item) bool { return it.Key == key }) {
			continue
		}
		ttl := int64(0)
		if e.Expire != 0 {
			ttl = max(e.Expire-c.now, 1)
		}
		items = append(items, migrate.Item{Key: key, TTL: ttl})
		entries = append(entries, e)
	}
	if len(items) == 0 {
		c.addSimple("NOKEY")
		return
	}
	// Release the shard locks for serialising and transferring, unless
	// inside EXEC (whose isolation needs them held).
	var held []*sync.Mutex
	if !c.inExec {
		names = sc.names[:0]
		for _, it := range items {
			names = append(names, it.Key)
		}
		ch := c.srv.keyGuards.Add(c.db, names)
		held = c.releaseForWait()
		defer c.srv.keyGuards.Release(c.db, names, ch)
	}
	compress, limits := c.srv.cfg.Bool(config.DirRdbcompression), c.srv.persistLimits()
	// The payloads go into one buffer (reused by the next MIGRATE when
	// small), each item a slice of it.
	bp := dumpBufs.Get().(*[]byte)
	buf := (*bp)[:0]
	ends = sc.ends[:0]
	for i := range items {
		// The guard keeps every command off the entry; expiry, eviction
		// and FLUSH unlink entries without changing their values. So a
		// big string goes out from the entry itself (rdb.DumpString):
		// no payload-sized allocation and copy, which for a 50 MB value
		// was one uninterruptible 50 MB memmove on the node's P.
		if e := entries[i]; e.Obj == nil && len(e.Str) >= bigDumpMin {
			d := rdb.DumpString(e.Str, compress)
			items[i].Body, items[i].Tail = d.Body, d.Tail
			buf = append(buf, d.Head...)
		} else {
			buf = persist.AppendDump(buf, e, compress, limits)
		}
		ends = append(ends, len(buf))
	}
	start := 0
	for i := range items {
		items[i].Payload = buf[start:ends[i]:ends[i]]
		start = ends[i]
	}
	res := migrate.Send(&o, items, c.srv.cfg.Bool(config.DirClusterEnabled))
	if cap(buf) <= maxDumpBuf {
		*bp = buf[:0]
		dumpBufs.Put(bp)
	}
	if held != nil {
		c.relockHeld(held)
	}
	if !o.Copy {
		moved := make([][]byte, 1, len(items)+1)
		moved[0] = []byte("DEL")
		var names []byte // the moved keys' bytes, one allocation
		for i, it := range items {
			// The entry may have expired or been flushed meanwhile.
			if !it.Acked || db.GetEntry(it.Key) != entries[i] {
				continue
			}
			db.Remove(it.Key)
			c.signalModifiedKey(it.Key)
			c.notify(notifyGeneric, "del", it.Key)
			if names == nil {
				n := 0
				for _, it := range items[i:] {
					n += len(it.Key)
				}
				names = make([]byte, 0, n)
			}
			names = append(names, it.Key...)
			moved = append(moved, names[len(names)-len(it.Key):len(names):len(names)])
		}
		if len(moved) > 1 {
			c.markDirty(len(moved) - 1)
			c.propagateAs(moved)
		}
	}
	switch {
	case res.TargetErr != "":
		c.addError("ERR Target instance replied with error: " + res.TargetErr)
	case res.IOErr != "":
		c.addError(res.IOErr)
	default:
		c.addOK()
	}
}
