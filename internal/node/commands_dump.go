package node

import (
	"bufio"
	"errors"
	"net"
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

// migrateConn is a cached connection to a MIGRATE target (Redis keeps
// them 10 seconds).
type migrateConn struct {
	nc     net.Conn
	br     *bufio.Reader
	lastDB int
	used   time.Time
}

var migrateCache = struct {
	sync.Mutex
	conns map[string]*migrateConn
}{conns: map[string]*migrateConn{}}

func migrateGet(addr string, timeout time.Duration) (*migrateConn, error) {
	migrateCache.Lock()
	mc := migrateCache.conns[addr]
	delete(migrateCache.conns, addr)
	migrateCache.Unlock()
	if mc != nil && time.Since(mc.used) < 10*time.Second {
		return mc, nil
	}
	if mc != nil {
		mc.nc.Close()
	}
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return &migrateConn{nc: nc, br: bufio.NewReader(nc), lastDB: -1}, nil
}

func migrateRelease(addr string, mc *migrateConn) {
	mc.used = time.Now()
	migrateCache.Lock()
	if old := migrateCache.conns[addr]; old != nil {
		old.nc.Close()
	}
	migrateCache.conns[addr] = mc
	migrateCache.Unlock()
	time.AfterFunc(11*time.Second, func() {
		migrateCache.Lock()
		if cur := migrateCache.conns[addr]; cur == mc && time.Since(mc.used) >= 10*time.Second {
			delete(migrateCache.conns, addr)
			mc.nc.Close()
		}
		migrateCache.Unlock()
	})
}

// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password] [AUTH2 username password] [KEYS key [key ...]]
func cmdMigrate(c *Client, args [][]byte) {
	copyKeys, replace := false, false
	var auth [][]byte
	firstKey, numKeys := 3, 1
	for j := 6; j < len(args); j++ {
		more := len(args) - j - 1
		switch {
		case eqFold(args[j], "copy"):
			copyKeys = true
		case eqFold(args[j], "replace"):
			replace = true
		case eqFold(args[j], "auth"):
			if more < 1 {
				c.addError(errSyntax)
				return
			}
			j++
			auth = [][]byte{args[j]}
		case eqFold(args[j], "auth2"):
			if more < 2 {
				c.addError(errSyntax)
				return
			}
			auth = [][]byte{args[j+1], args[j+2]}
			j += 2
		case eqFold(args[j], "keys"):
			if len(args[3]) != 0 {
				c.addError("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
				return
			}
			firstKey, numKeys = j+1, len(args)-j-1
			j = len(args)
		default:
			c.addError(errSyntax)
			return
		}
	}
	timeoutMs, ok := parseInt(args[5])
	if !ok {
		c.addError(errNotInt)
		return
	}
	dbid, ok := parseInt(args[4])
	if !ok {
		c.addError(errNotInt)
		return
	}
	if timeoutMs <= 0 {
		timeoutMs = 1000
	}
	db := c.curDB()
	type kv struct {
		key string
		ttl int64
		val []byte
	}
	var items []kv
	for i := firstKey; i < firstKey+numKeys; i++ {
		k := string(args[i])
		e := db.Lookup(k, c.now)
		if e == nil {
			continue
		}
		ttl := int64(0)
		if e.Expire != 0 {
			ttl = e.Expire - c.now
			if ttl < 1 {
				ttl = 1
			}
		}
		items = append(items, kv{k, ttl, rdb.Dump(entryValue(e), c.srv.cfg.Bool(DirRdbcompression), c.srv.rdbLimits())})
	}
	if len(items) == 0 {
		c.addSimple("NOKEY")
		return
	}
	addr := net.JoinHostPort(string(args[1]), string(args[2]))
	timeout := time.Duration(timeoutMs) * time.Millisecond
	mc, err := migrateGet(addr, timeout)
	if err != nil {
		c.addError("IOERR error or timeout connecting to the client")
		return
	}
	var out []byte
	if auth != nil {
		out = persist.AppendCommand(out, append([][]byte{[]byte("AUTH")}, auth...)...)
	}
	selectDB := mc.lastDB != int(dbid)
	if selectDB {
		out = persist.AppendCommand(out, []byte("SELECT"), []byte(strconv.FormatInt(dbid, 10)))
	}
	restore := "RESTORE"
	if c.srv.cfg.Bool(DirClusterEnabled) {
		restore = "RESTORE-ASKING"
	}
	for _, it := range items {
		cmd := [][]byte{[]byte(restore), []byte(it.key), []byte(strconv.FormatInt(it.ttl, 10)), it.val}
		if replace {
			cmd = append(cmd, []byte("REPLACE"))
		}
		out = persist.AppendCommand(out, cmd...)
	}
	_ = mc.nc.SetDeadline(time.Now().Add(timeout))
	if _, err := mc.nc.Write(out); err != nil {
		mc.nc.Close()
		c.addError("IOERR error or timeout writing to target instance")
		return
	}
	readReply := func() (string, bool) {
		v, err := resp.ReadValue(mc.br)
		if err != nil {
			return "", false
		}
		if v.IsError() {
			return v.Str, true
		}
		return "", true
	}
	fail := func() {
		mc.nc.Close()
		c.addError("IOERR error or timeout reading to target instance")
	}
	var errMsg string
	if auth != nil {
		m, ok := readReply()
		if !ok {
			fail()
			return
		}
		if m != "" && errMsg == "" {
			errMsg = m
		}
	}
	if selectDB {
		m, ok := readReply()
		if !ok {
			fail()
			return
		}
		if m != "" {
			if errMsg == "" {
				errMsg = m
			}
		} else {
			mc.lastDB = int(dbid)
		}
	}
	var moved [][]byte
	for _, it := range items {
		m, ok := readReply()
		if !ok {
			fail()
			return
		}
		if m != "" {
			if errMsg == "" {
				errMsg = m
			}
			continue
		}
		if !copyKeys {
			if db.Remove(it.key) != nil {
				c.signalModifiedKey(it.key)
				c.notify(notifyGeneric, "del", it.key)
				moved = append(moved, []byte(it.key))
			}
		}
	}
	_ = mc.nc.SetDeadline(time.Time{})
	migrateRelease(addr, mc)
	if len(moved) > 0 {
		c.markDirty(len(moved))
		c.propagateAs(append([][]byte{[]byte("DEL")}, moved...))
	}
	if errMsg != "" {
		c.addError("ERR Target instance replied with error: " + errMsg)
		return
	}
	c.addOK()
}
