package node

import (
	"bufio"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/persist"
	"github.com/shardis/shardis/internal/rdb"
	"github.com/shardis/shardis/internal/resp"
)

// DUMP, RESTORE and MIGRATE, with Redis's DUMP payload (value in RDB
// encoding + 2-byte RDB version + CRC64), so payloads move freely between
// redis-server and shardnode.

func registerDumpCommands(t *commandTable) {
	t.add(&command{name: "dump", arity: 2, flags: flagReadOnly, first: 1, last: 1, step: 1, fn: cmdDump, group: "keyspace", since: "2.6.0"})
	t.add(&command{name: "restore", arity: -4, flags: flagWrite | flagDenyOOM, first: 1, last: 1, step: 1, fn: cmdRestore, group: "keyspace", since: "2.6.0"})
	t.add(&command{name: "restore-asking", arity: -4, flags: flagWrite | flagDenyOOM, first: 1, last: 1, step: 1, fn: cmdRestore, group: "server", since: "3.0.0"})
	t.add(&command{name: "migrate", arity: -6, flags: flagWrite, keys: migrateKeys, fn: cmdMigrate, group: "keyspace", since: "2.6.0"})
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
	c.addBulk(persist.Dump(e, c.srv.cfg.Bool(DirRdbcompression), c.srv.persistLimits()))
}

// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
func cmdRestore(c *Client, args [][]byte) {
	replace, absTTL := false, false
	idle, freq := int64(-1), int64(-1)
	for j := 4; j < len(args); j++ {
		more := len(args) - j - 1
		switch {
		case eqFold(args[j], "replace"):
			replace = true
		case eqFold(args[j], "absttl"):
			absTTL = true
		case eqFold(args[j], "idletime") && more >= 1 && freq == -1:
			j++
			v, ok := parseInt(args[j])
			if !ok {
				c.addError(errNotInt)
				return
			}
			if v < 0 {
				c.addError("ERR Invalid IDLETIME value, must be >= 0")
				return
			}
			idle = v
		case eqFold(args[j], "freq") && more >= 1 && idle == -1:
			j++
			v, ok := parseInt(args[j])
			if !ok {
				c.addError(errNotInt)
				return
			}
			if v < 0 || v > 255 {
				c.addError("ERR Invalid FREQ value, must be >= 0 and <= 255")
				return
			}
			freq = v
		default:
			c.addError(errSyntax)
			return
		}
	}
	key := string(args[1])
	db := c.curDB()
	if !replace && db.Lookup(key, c.now) != nil {
		c.addError("BUSYKEY Target key name already exists.")
		return
	}
	ttl, ok := parseInt(args[2])
	if !ok {
		c.addError(errNotInt)
		return
	}
	if ttl < 0 {
		c.addError("ERR Invalid TTL value, must be >= 0")
		return
	}
	e, err := persist.Restore(args[3], c.srv.persistLimits())
	if err != nil {
		if errors.Is(err, rdb.ErrBadPayload) {
			c.addError(errBadPayload)
		} else {
			c.addError("ERR Bad data format")
		}
		return
	}
	deleted := false
	if replace {
		deleted = db.Remove(key) != nil
	}
	if ttl > 0 && !absTTL {
		ttl += c.now
	}
	if ttl > 0 && ttl <= c.now {
		// Already expired: nothing to add; a replaced key is deleted.
		if deleted {
			c.propagateAs([][]byte{[]byte("DEL"), []byte(key)})
			c.signalModifiedKey(key)
			c.notify(notifyGeneric, "del", key)
			c.markDirty(1)
		}
		c.addOK()
		return
	}
	e.Expire = ttl
	switch pol := c.srv.cfg.Get(DirMaxmemoryPolicy); {
	case strings.HasSuffix(pol, "-lfu"):
		e.LRU = 5 // LFU_INIT_VAL
		if freq >= 0 {
			e.LRU = uint32(freq)
		}
	default:
		e.LRU = lruClock()
		if idle >= 0 {
			e.LRU -= uint32(idle)
		}
	}
	db.Add(key, e)
	if ttl > 0 && !absTTL {
		// Propagated with an absolute TTL, as Redis 7 does.
		prop := cloneArgs(args)
		prop[2] = []byte(strconv.FormatInt(ttl, 10))
		prop = append(prop, []byte("ABSTTL"))
		c.propagateAs(prop)
	}
	c.signalModifiedKey(key)
	c.notify(notifyGeneric, "restore", key)
	c.markDirty(1)
	c.addOK()
}

// ---- MIGRATE -------------------------------------------------------------

// migrateKeys: the key at 3, or the keys after KEYS when it is "".
func migrateKeys(args [][]byte) []int {
	if len(args) > 3 && len(args[3]) == 0 {
		for j := 6; j < len(args); j++ {
			if eqFold(args[j], "keys") {
				pos := make([]int, 0, len(args)-j-1)
				for k := j + 1; k < len(args); k++ {
					pos = append(pos, k)
				}
				return pos
			}
			if eqFold(args[j], "auth") {
				j++
			} else if eqFold(args[j], "auth2") {
				j += 2
			}
		}
		return nil
	}
	if len(args) > 3 {
		return []int{3}
	}
	return nil
}

// Cached MIGRATE connections, as Redis's migrate_cached_sockets: one per
// target address, closed after 10 seconds unused, at most 64.
const (
	migrateCacheTTL   = 10 * time.Second
	migrateCacheItems = 64
	// migrateChunk is the size of the writes of a MIGRATE's request, each
	// with its own timeout (Redis writes 64 kB at a time).
	migrateChunk = 64 << 10
)

// migrateConn is a cached connection to a MIGRATE target.
type migrateConn struct {
	nc net.Conn
	br *bufio.Reader
	// lastDB is the database the target has selected, -1 unknown.
	lastDB int
	// used is when the connection was last released to the cache.
	used time.Time
}

// migrateCache holds the idle connections; a MIGRATE takes its target's
// connection out while it uses it, so two MIGRATEs never share one.
var migrateCache = struct {
	sync.Mutex
	conns map[string]*migrateConn
}{conns: map[string]*migrateConn{}}

// migrateGet returns the cached connection to addr (reused: true) or a
// new one.
func migrateGet(addr string, timeout time.Duration) (mc *migrateConn, reused bool, err error) {
	migrateCache.Lock()
	mc = migrateCache.conns[addr]
	delete(migrateCache.conns, addr)
	migrateCache.Unlock()
	if mc != nil && time.Since(mc.used) < migrateCacheTTL {
		return mc, true, nil
	}
	if mc != nil {
		mc.nc.Close()
	}
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, false, err
	}
	return &migrateConn{nc: nc, br: bufio.NewReader(nc), lastDB: -1}, false, nil
}

// migrateRelease puts mc back in the cache and schedules its closing
// when it stays unused for migrateCacheTTL.
func migrateRelease(addr string, mc *migrateConn) {
	_ = mc.nc.SetDeadline(time.Time{})
	mc.used = time.Now()
	migrateCache.Lock()
	if old := migrateCache.conns[addr]; old != nil {
		old.nc.Close()
	} else if len(migrateCache.conns) >= migrateCacheItems {
		for a, c := range migrateCache.conns { // Redis drops a random one
			c.nc.Close()
			delete(migrateCache.conns, a)
			break
		}
	}
	migrateCache.conns[addr] = mc
	migrateCache.Unlock()
	time.AfterFunc(migrateCacheTTL+time.Second, func() {
		migrateCache.Lock()
		if cur := migrateCache.conns[addr]; cur == mc && time.Since(mc.used) >= migrateCacheTTL {
			delete(migrateCache.conns, addr)
			mc.nc.Close()
		}
		migrateCache.Unlock()
	})
}

// migrateOptions are MIGRATE's parsed arguments.
type migrateOptions struct {
	addr          string
	db            int64
	timeout       time.Duration
	copy, replace bool
	// auth is AUTH's arguments (password, or username and password).
	auth [][]byte
	keys [][]byte
}

// parseMigrate parses MIGRATE's arguments; "" or the error to reply.
func parseMigrate(args [][]byte) (migrateOptions, string) {
	o := migrateOptions{keys: args[3:4]}
	for j := 6; j < len(args); j++ {
		more := len(args) - j - 1
		switch {
		case eqFold(args[j], "copy"):
			o.copy = true
		case eqFold(args[j], "replace"):
			o.replace = true
		case eqFold(args[j], "auth"):
			if more < 1 {
				return o, errSyntax
			}
			j++
			o.auth = [][]byte{args[j]}
		case eqFold(args[j], "auth2"):
			if more < 2 {
				return o, errSyntax
			}
			o.auth = [][]byte{args[j+1], args[j+2]}
			j += 2
		case eqFold(args[j], "keys"):
			if len(args[3]) != 0 {
				return o, "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string"
			}
			o.keys = args[j+1:]
			j = len(args)
		default:
			return o, errSyntax
		}
	}
	timeoutMs, ok := parseInt(args[5])
	if !ok {
		return o, errNotInt
	}
	if o.db, ok = parseInt(args[4]); !ok {
		return o, errNotInt
	}
	if timeoutMs <= 0 {
		timeoutMs = 1000
	}
	o.timeout = time.Duration(timeoutMs) * time.Millisecond
	o.addr = net.JoinHostPort(string(args[1]), string(args[2]))
	return o, ""
}

// migrateItem is one key MIGRATE moves.
type migrateItem struct {
	key string
	e   *keyspace.Entry
	// ttl is the key's remaining time to live in ms, 0 for none.
	ttl     int64
	payload []byte
	acked   bool
}

// migrateResult is what the target answered.
type migrateResult struct {
	// ioErr is the IOERR to reply ("" none), after a socket error.
	ioErr string
	// targetErr is the target's first error reply ("" none).
	targetErr string
}

// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password] [AUTH2 username password] [KEYS key [key ...]]
//
// The keys are serialised and sent as one pipeline of RESTORE (or, in
// cluster mode, RESTORE-ASKING) commands on a cached connection, then
// deleted once the target acknowledged them, as Redis does. Outside MULTI
// the transfer runs without the keys' shard locks, under key guards
// (migrate_guard.go): commands on the moving keys wait, the other keys of
// their shards are served.
func cmdMigrate(c *Client, args [][]byte) {
	o, msg := parseMigrate(args)
	if msg != "" {
		c.addError(msg)
		return
	}
	db := c.curDB()
	var items []migrateItem
	for _, k := range o.keys {
		key := string(k)
		e := db.Lookup(key, c.now)
		if e == nil || slices.ContainsFunc(items, func(it migrateItem) bool { return it.key == key }) {
			continue
		}
		ttl := int64(0)
		if e.Expire != 0 {
			ttl = max(e.Expire-c.now, 1)
		}
		items = append(items, migrateItem{key: key, e: e, ttl: ttl})
	}
	if len(items) == 0 {
		c.addSimple("NOKEY")
		return
	}
	// Release the shard locks for serialising and transferring, unless
	// inside EXEC (whose isolation needs them held).
	var held []*sync.Mutex
	if !c.inExec {
		names := make([]string, len(items))
		for i, it := range items {
			names[i] = it.key
		}
		ch := c.srv.keyGuards.add(c.db, names)
		held = c.releaseForWait()
		defer c.srv.keyGuards.release(c.db, names, ch)
	}
	compress, limits := c.srv.cfg.Bool(DirRdbcompression), c.srv.rdbLimits()
	for i := range items {
		// The guard keeps every command off the entry; expiry, eviction
		// and FLUSH unlink entries without changing their values.
		items[i].payload = rdb.Dump(entryValue(items[i].e), compress, limits)
	}
	res := migrateSend(&o, items, c.srv.cfg.Bool(DirClusterEnabled))
	if held != nil {
		c.relockHeld(held)
	}
	if !o.copy {
		var moved [][]byte
		for _, it := range items {
			// The entry may have expired or been flushed meanwhile.
			if !it.acked || db.GetEntry(it.key) != it.e {
				continue
			}
			db.Remove(it.key)
			c.signalModifiedKey(it.key)
			c.notify(notifyGeneric, "del", it.key)
			moved = append(moved, []byte(it.key))
		}
		if len(moved) > 0 {
			c.markDirty(len(moved))
			c.propagateAs(append([][]byte{[]byte("DEL")}, moved...))
		}
	}
	switch {
	case res.targetErr != "":
		c.addError("ERR Target instance replied with error: " + res.targetErr)
	case res.ioErr != "":
		c.addError(res.ioErr)
	default:
		c.addOK()
	}
}

// migrateSend sends items to o's target and reads its replies, marking
// the acknowledged items. A socket error on a cached connection before
// any reply is retried once on a new connection (the target may have
// closed an idle one), unless it was a timeout, as Redis does.
func migrateSend(o *migrateOptions, items []migrateItem, clusterMode bool) migrateResult {
	restore := []byte("RESTORE")
	if clusterMode {
		restore = []byte("RESTORE-ASKING")
	}
	for attempt := 0; ; attempt++ {
		mc, _, err := migrateGet(o.addr, o.timeout)
		if err != nil {
			return migrateResult{ioErr: "IOERR error or timeout connecting to the client"}
		}
		var out []byte
		if o.auth != nil {
			out = persist.AppendCommand(out, append([][]byte{[]byte("AUTH")}, o.auth...)...)
		}
		selectDB := mc.lastDB != int(o.db)
		if selectDB {
			out = persist.AppendCommand(out, []byte("SELECT"), strconv.AppendInt(nil, o.db, 10))
		}
		for _, it := range items {
			cmd := [][]byte{restore, []byte(it.key), strconv.AppendInt(nil, it.ttl, 10), it.payload}
			if o.replace {
				cmd = append(cmd, []byte("REPLACE"))
			}
			out = persist.AppendCommand(out, cmd...)
		}
		res, retry := migrateExchange(mc, o, out, selectDB, items)
		if res.ioErr != "" {
			mc.nc.Close()
			if retry && attempt == 0 {
				continue
			}
			return res
		}
		if res.targetErr != "" {
			mc.lastDB = -1
		} else {
			mc.lastDB = int(o.db)
		}
		migrateRelease(o.addr, mc)
		return res
	}
}

// migrateExchange writes out and reads the replies of the AUTH, SELECT
// and RESTOREs it holds; retry reports a socket error before any reply
// that was not a timeout.
func migrateExchange(mc *migrateConn, o *migrateOptions, out []byte, selectDB bool, items []migrateItem) (res migrateResult, retry bool) {
	isTimeout := func(err error) bool {
		var ne net.Error
		return errors.As(err, &ne) && ne.Timeout()
	}
	for pos := 0; pos < len(out); pos += migrateChunk {
		_ = mc.nc.SetWriteDeadline(time.Now().Add(o.timeout))
		if _, err := mc.nc.Write(out[pos:min(pos+migrateChunk, len(out))]); err != nil {
			return migrateResult{ioErr: "IOERR error or timeout writing to target instance"}, !isTimeout(err)
		}
	}
	read := func() (string, error) {
		_ = mc.nc.SetReadDeadline(time.Now().Add(o.timeout))
		v, err := resp.ReadValue(mc.br)
		if err != nil {
			return "", err
		}
		if v.IsError() {
			return v.Str, nil
		}
		return "", nil
	}
	readErr := "IOERR error or timeout reading to target instance"
	// An AUTH or SELECT error fails every key, as in Redis.
	var setupErr string
	if o.auth != nil {
		m, err := read()
		if err != nil {
			return migrateResult{ioErr: readErr}, !isTimeout(err)
		}
		setupErr = m
	}
	if selectDB {
		m, err := read()
		if err != nil {
			return migrateResult{ioErr: readErr}, !isTimeout(err)
		}
		if setupErr == "" {
			setupErr = m
		}
	}
	for i := range items {
		m, err := read()
		if err != nil {
			return migrateResult{ioErr: readErr, targetErr: res.targetErr}, i == 0 && res.targetErr == "" && !isTimeout(err)
		}
		switch {
		case setupErr != "":
			if res.targetErr == "" {
				res.targetErr = setupErr
			}
		case m != "":
			if res.targetErr == "" {
				res.targetErr = m
			}
		default:
			items[i].acked = true
		}
	}
	return res, false
}
