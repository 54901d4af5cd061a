package node

import (
	"bytes"
	"math/rand/v2"
	"strconv"

	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/keyopts"
	"github.com/shardis/shardis/internal/node/keyspace"
)

// Generic key commands (Redis's db.c and object.c): DEL, EXISTS, TYPE,
// KEYS, SCAN, RANDOMKEY, RENAME, MOVE, COPY, OBJECT. Expiry commands are in
// commands_expire.go.

func registerKeyCommands(t *commandTable) {
	add := func(c *command) {
		c.group = "generic"
		if c.since == "" {
			c.since = "1.0.0"
		}
		t.add(c)
	}
	add(&command{name: "del", arity: -2, flags: flagWrite, first: 1, last: -1, fn: cmdDel})
	add(&command{name: "unlink", arity: -2, flags: flagWrite | flagFast, first: 1, last: -1, fn: cmdDel, since: "4.0.0"})
	add(&command{name: "exists", arity: -2, flags: flagReadOnly | flagFast, first: 1, last: -1, fn: cmdExists})
	add(&command{name: "touch", arity: -2, flags: flagReadOnly | flagFast, first: 1, last: -1, fn: cmdTouch, since: "3.2.1"})
	add(&command{name: "type", arity: 2, flags: flagReadOnly | flagFast, first: 1, last: 1, fn: cmdType})
	add(&command{name: "keys", arity: 2, flags: flagReadOnly | flagLockDB, fn: cmdKeys})
	// SCAN and RANDOMKEY lock one shard at a time themselves.
	add(&command{name: "scan", arity: -2, flags: flagReadOnly, fn: cmdScan, since: "2.8.0"})
	add(&command{name: "randomkey", arity: 1, flags: flagReadOnly, fn: cmdRandomKey})
	add(&command{name: "rename", arity: 3, flags: flagWrite, first: 1, last: 2, fn: cmdRename})
	add(&command{name: "renamenx", arity: 3, flags: flagWrite | flagFast, first: 1, last: 2, fn: cmdRenameNX})
	// MOVE and COPY touch another database: they lock everything.
	add(&command{name: "move", arity: 3, flags: flagWrite | flagFast | flagLockAll, first: 1, last: 1, fn: cmdMove})
	add(&command{name: "copy", arity: -3, flags: flagWrite | flagDenyOOM | flagLockAll, first: 1, last: 2, fn: cmdCopy, since: "6.2.0"})
	add(&command{name: "object", arity: -2, fn: cmdHelpDispatch, since: "2.2.3"})
	t.addSub("object", &command{name: "encoding", arity: 3, flags: flagReadOnly, first: 2, last: 2, fn: cmdObjectEncoding})
	t.addSub("object", &command{name: "freq", arity: 3, flags: flagReadOnly, first: 2, last: 2, fn: cmdObjectFreq})
	t.addSub("object", &command{name: "idletime", arity: 3, flags: flagReadOnly, first: 2, last: 2, fn: cmdObjectIdletime})
	t.addSub("object", &command{name: "refcount", arity: 3, flags: flagReadOnly, first: 2, last: 2, fn: cmdObjectRefcount})
	t.addSub("object", &command{name: "help", arity: 2, flags: flagLoading | flagStale, fn: cmdObjectHelp})
}

// DEL key [key ...] (also UNLINK)
func cmdDel(c *Client, args [][]byte) {
	db := c.curDB()
	n := 0
	for _, k := range args[1:] {
		e := db.Lookup(bstr(k), c.now)
		if e == nil {
			continue
		}
		key := e.Key
		db.Remove(key)
		n++
		c.signalModifiedKey(key)
		c.notify(notifyGeneric, "del", key)
	}
	c.markDirty(n)
	c.addInt(int64(n))
}

// EXISTS key [key ...] (does not refresh the keys' access time)
func cmdExists(c *Client, args [][]byte) {
	n := 0
	for _, k := range args[1:] {
		if c.lookupNoTouch(k) != nil {
			n++
		}
	}
	c.addInt(int64(n))
}

// TOUCH key [key ...]
func cmdTouch(c *Client, args [][]byte) {
	db := c.curDB()
	n := 0
	for _, k := range args[1:] {
		if e := db.Lookup(bstr(k), c.now); e != nil {
			e.LRU = c.lruNow()
			n++
		}
	}
	c.addInt(int64(n))
}

// lruNow is the LRU clock (seconds) at the command's time.
func (c *Client) lruNow() uint32 { return uint32(c.now / 1000) }

// TYPE key
func cmdType(c *Client, args [][]byte) {
	e := c.lookupNoTouch(args[1])
	if e == nil {
		c.addSimple("none")
		return
	}
	c.addSimple(typeOf(e))
}

// KEYS pattern
func cmdKeys(c *Client, args [][]byte) {
	db := c.curDB()
	pat := string(args[1])
	all := pat == "*"
	var keys []string
	for i := range db.Shards {
		db.Shards[i].ForEach(func(e *keyspace.Entry) bool {
			if (all || globMatch(pat, e.Key, false)) && !e.Expired(c.now) {
				keys = append(keys, e.Key)
			}
			return true
		})
	}
	c.addStrings(keys)
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
//
// keyopts.ScanWalk walks the shards, one locked at a time; this handler
// steps a shard's bucket cursor and filters the keys.
func cmdScan(c *Client, args [][]byte) {
	cursor, ok := parseScanCursor(args[1])
	if !ok {
		c.addError(keyopts.ErrCursor.Error())
		return
	}
	o, err := keyopts.ParseScan(args[2:])
	if err != nil {
		c.addError(err.Error())
		return
	}
	db := c.curDB()
	var keys [][]byte
	var found []*keyspace.Entry
	begin := func(i int) func() { return c.lockShardIfFree(&db.Shards[i]) }
	next := keyopts.ScanWalk(cursor, o.Count, begin, func(i int, bucket uint64) (uint64, int) {
		found = found[:0]
		bucket = db.Shards[i].Scan(bucket, func(e *keyspace.Entry) { found = append(found, e) })
		for _, e := range found {
			switch {
			case (o.Match && !globMatch(o.Pattern, e.Key, false)) || !o.TypeMatches(typeOf(e)):
			case e.Expired(c.now):
				if c.srv.expireDeletes() {
					db.ExpireEntry(e.Key)
				}
			default:
				keys = append(keys, []byte(e.Key))
			}
		}
		return bucket, len(keys)
	})
	c.addArrayLen(2)
	c.addBulkString(strconv.FormatUint(next, 10))
	c.addBulks(keys)
}

// RANDOMKEY
func cmdRandomKey(c *Client, args [][]byte) {
	db := c.curDB()
	for tries := 0; tries < 1000; tries++ {
		if db.Size() == 0 {
			break
		}
		// Pick a shard at random among the non-empty ones, weighted by
		// size, then a random key of it (counts can move between the
		// unlocked read and the lock; that only skews the odds).
		var counts [keyspace.NumShards]int
		total := 0
		for i := range db.Shards {
			unlock := c.lockShardIfFree(&db.Shards[i])
			counts[i] = db.Shards[i].Len()
			unlock()
			total += counts[i]
		}
		if total == 0 {
			break
		}
		r := rand.IntN(total)
		idx := 0
		for ; idx < keyspace.NumShards-1 && r >= counts[idx]; idx++ {
			r -= counts[idx]
		}
		unlock := c.lockShardIfFree(&db.Shards[idx])
		e := db.Shards[idx].RandomEntry()
		var key string
		expired := false
		if e != nil {
			key = e.Key
			if e.Expired(c.now) && c.srv.expireDeletes() {
				db.ExpireEntry(key)
				expired = true
			}
		}
		unlock()
		if e == nil || expired {
			continue
		}
		c.addBulkString(key)
		return
	}
	c.addNull()
}

// lockShardIfFree locks sh for a command that locks shards itself (SCAN,
// RANDOMKEY) unless the client already holds it (inside EXEC, whose locks
// are taken up front). It returns what releases it.
func (c *Client) lockShardIfFree(sh *keyspace.Shard) (unlock func()) {
	for _, m := range c.held {
		if m == &sh.Mu {
			return func() {}
		}
	}
	sh.Mu.Lock()
	return sh.Mu.Unlock
}

// RENAME key newkey
func cmdRename(c *Client, args [][]byte) { renameGeneric(c, args, false) }

// RENAMENX key newkey
func cmdRenameNX(c *Client, args [][]byte) { renameGeneric(c, args, true) }

func renameGeneric(c *Client, args [][]byte, nx bool) {
	db := c.curDB()
	e := db.Lookup(bstr(args[1]), c.now)
	if e == nil {
		c.addError(errNoSuchKey)
		return
	}
	if bytes.Equal(args[1], args[2]) {
		c.addOKOr(nx, 0)
		return
	}
	if db.Lookup(bstr(args[2]), c.now) != nil {
		if nx {
			c.addInt(0)
			return
		}
	}
	src, dst := e.Key, string(args[2])
	moveEntry(db, src, db, dst)
	c.signalModifiedKey(src)
	c.signalModifiedKey(dst)
	c.notify(notifyGeneric, "rename_from", src)
	c.notify(notifyGeneric, "rename_to", dst)
	c.markDirty(1)
	c.addOKOr(nx, 1)
}

// addOKOr replies :n for the NX variant of a command (RENAMENX, MSETNX)
// and +OK for the other.
func (c *Client) addOKOr(nx bool, n int64) {
	if nx {
		c.addInt(n)
	} else {
		c.addOK()
	}
}

// moveEntry moves the value and expiry of key src in from to key dst in
// to, replacing whatever dst held. Both keys' shards must be locked.
func moveEntry(from *keyspace.DB, src string, to *keyspace.DB, dst string) {
	e := from.Remove(src)
	to.Remove(dst)
	ne := &keyspace.Entry{Str: e.Str, Obj: e.Obj, Expire: e.Expire, LRU: e.LRU}
	to.Add(dst, ne)
}

// MOVE key db
func cmdMove(c *Client, args [][]byte) {
	if c.srv.cfg.Bool(config.DirClusterEnabled) {
		c.addError("ERR MOVE is not allowed in cluster mode")
		return
	}
	id, ok := c.parseDBIndex(args[2])
	if !ok {
		return
	}
	src, dst := c.curDB(), c.srv.dbs[id]
	if src == dst {
		c.addError("ERR source and destination objects are the same")
		return
	}
	e := src.Lookup(bstr(args[1]), c.now)
	if e == nil {
		c.addInt(0)
		return
	}
	key := e.Key
	if dst.Lookup(key, c.now) != nil {
		c.addInt(0)
		return
	}
	moveEntry(src, key, dst, key)
	c.srv.touchWatchedKey(src.ID, key)
	c.srv.touchWatchedKey(dst.ID, key)
	c.srv.notifyKeyspaceEvent(notifyGeneric, "move_from", key, src.ID)
	c.srv.notifyKeyspaceEvent(notifyGeneric, "move_to", key, dst.ID)
	c.markDirty(1)
	c.addInt(1)
}

// COPY source destination [DB destination-db] [REPLACE]
func cmdCopy(c *Client, args [][]byte) {
	src, dst := c.curDB(), c.curDB()
	o, err := keyopts.ParseCopy(args[3:], len(c.srv.dbs))
	if err != nil {
		c.addError(err.Error())
		return
	}
	if o.DB >= 0 {
		dst = c.srv.dbs[o.DB]
	}
	if c.srv.cfg.Bool(config.DirClusterEnabled) && (src.ID != 0 || dst.ID != 0) {
		c.addError("ERR Copying to another database is not allowed in cluster mode")
		return
	}
	if src == dst && bytes.Equal(args[1], args[2]) {
		c.addError("ERR source and destination objects are the same")
		return
	}
	e := src.Lookup(bstr(args[1]), c.now)
	if e == nil {
		c.addInt(0)
		return
	}
	newKey := string(args[2])
	if dst.Lookup(newKey, c.now) != nil {
		if !o.Replace {
			c.addInt(0)
			return
		}
		dst.Remove(newKey)
	}
	dst.Add(newKey, keyopts.CopyEntry(e))
	c.srv.touchWatchedKey(dst.ID, newKey)
	c.srv.notifyKeyspaceEvent(notifyGeneric, "copy_to", newKey, dst.ID)
	c.markDirty(1)
	c.addInt(1)
}

// lookupNoTouch is lookup without refreshing the key's LRU clock (Redis's
// LOOKUP_NOTOUCH: OBJECT, TYPE, TTL).
func (c *Client) lookupNoTouch(key []byte) *keyspace.Entry {
	db := c.curDB()
	e := db.GetEntry(bstr(key))
	if e != nil && e.Expired(c.now) {
		// lookup decides what an expired key is (deleted on a master);
		// it only touches live keys, which this one is not.
		return db.Lookup(e.Key, c.now)
	}
	return e
}

// objectLookup finds the key of an OBJECT subcommand, replying null when
// it is missing.
func objectLookup(c *Client, key []byte) *keyspace.Entry {
	e := c.lookupNoTouch(key)
	if e == nil {
		c.addNull()
	}
	return e
}

// OBJECT ENCODING key
func cmdObjectEncoding(c *Client, args [][]byte) {
	if e := objectLookup(c, args[2]); e != nil {
		c.addBulkString(encodingOf(e))
	}
}

// isLFU reports whether the maxmemory policy tracks access frequency.
func (c *Client) isLFU() bool {
	p := c.srv.cfg.Get(config.DirMaxmemoryPolicy)
	return p == "allkeys-lfu" || p == "volatile-lfu"
}

// OBJECT FREQ key
func cmdObjectFreq(c *Client, args [][]byte) {
	switch e := objectLookup(c, args[2]); {
	case e == nil:
	case !c.isLFU():
		c.addError(keyopts.ErrNotLFU.Error())
	default:
		c.addInt(int64(e.LRU & 0xff))
	}
}

// OBJECT IDLETIME key
func cmdObjectIdletime(c *Client, args [][]byte) {
	switch e := objectLookup(c, args[2]); {
	case e == nil:
	case c.isLFU():
		c.addError(keyopts.ErrLFU.Error())
	default:
		c.addInt(keyopts.IdleTime(e.LRU, c.lruNow()))
	}
}

// OBJECT REFCOUNT key
func cmdObjectRefcount(c *Client, args [][]byte) {
	switch e := objectLookup(c, args[2]); {
	case e == nil:
	case e.Obj == nil:
		c.addInt(keyopts.Refcount(e.Str))
	default:
		c.addInt(1)
	}
}

// OBJECT HELP
func cmdObjectHelp(c *Client, args [][]byte) { c.addHelp("OBJECT", keyopts.ObjectHelp) }

// keyChanged is what follows a write to key: WATCH is touched, the
// keyspace event of class goes out, and the change counts in dirty.
func (c *Client) keyChanged(class int, event, key string) {
	c.signalModifiedKey(key)
	c.notify(class, event, key)
	c.markDirty(1)
}

// keyChangedAs is keyChanged for a command propagated as prop (counted in
// dirty before it, as propagateAs would count it otherwise).
func (c *Client) keyChangedAs(class int, event, key string, prop [][]byte) {
	c.markDirty(1)
	c.propagateAs(prop)
	c.signalModifiedKey(key)
	c.notify(class, event, key)
}
