package node

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/value"
	"github.com/shardis/shardis/internal/rdb"
)

// DEBUG subcommands of persistence, registered through RegisterDebug:
// RELOAD (save, flush, load the RDB file back) and OBJECT (a key's
// low-level details).

func registerPersistenceDebug(s *Server) {
	s.RegisterDebug("reload", debugReload)
	s.RegisterDebug("object", debugObject)
	s.RegisterDebug("digest", debugDigest)
	s.RegisterDebug("digest-value", debugDigestValue)
	s.RegisterDebug("loadaof", debugLoadAOF)
}

// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save, empty the dataset and
// load the file back, atomically as in Redis: every shard lock is held
// from the save to the end of the load (inside EXEC the block holds them).
func debugReload(c *Client, args [][]byte) {
	save, flush, merge := true, true, false
	for _, a := range args[2:] {
		switch {
		case eqFold(a, "merge"):
			merge = true
		case eqFold(a, "noflush"):
			flush = false
		case eqFold(a, "nosave"):
			save = false
		default:
			c.addError("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.")
			return
		}
	}
	s := c.srv
	p := s.persist
	unlock := c.debugLockAll()
	defer unlock()
	if save {
		if err := p.SaveHeld(); err != nil {
			c.addError("ERR " + err.Error())
			return
		}
	}
	f, err := os.Open(p.RDBPath())
	if err != nil {
		c.addError("ERR Error trying to load the RDB dump, check server logs.")
		return
	}
	defer f.Close()
	s.loadHeld.Store(true)
	s.loading.Store(true)
	s.snapGuardAll()
	if flush {
		for _, db := range s.dbs {
			db.Flush()
		}
	}
	h := p.Loader(s.dbs)
	if merge {
		h.Key = s.mergeKeyHandler(h.Key)
	}
	_, err = rdb.Parse(f, h)
	s.loading.Store(false)
	s.loadHeld.Store(false)
	if err != nil {
		s.log.Warn("DEBUG RELOAD: loading failed", "err", err)
		c.addError("ERR Error trying to load the RDB dump, check server logs.")
		return
	}
	s.log.Info("DB reloaded by DEBUG RELOAD")
	c.addOK()
}

// mergeKeyHandler replaces existing keys instead of failing (MERGE).
func (s *Server) mergeKeyHandler(next func(e *rdb.Entry) error) func(e *rdb.Entry) error {
	return func(e *rdb.Entry) error {
		s.dbs[e.DB].Remove(string(e.Key))
		return next(e)
	}
}

// DEBUG OBJECT key
func debugObject(c *Client, args [][]byte) {
	if len(args) != 3 {
		debugSyntaxError(c, args)
		return
	}
	key := string(args[2])
	db := c.curDB()
	sh := db.KeyShard(key)
	unlock := c.debugLockShard(&sh.Mu)
	c.now = time.Now().UnixMilli()
	e := db.GetEntry(key) // as Redis's dictFind: no expiry check (a replica keeps expired keys)
	if e == nil {
		unlock()
		c.addError(errNoSuchKey)
		return
	}
	v := entryValue(e)
	payload := rdb.Dump(v, c.srv.cfg.Bool(DirRdbcompression), c.srv.rdbLimits())
	serialized := len(payload) - 11
	enc := encodingOf(e)
	lru := e.LRU
	extra := ""
	if l, ok := e.Obj.(*value.List); ok {
		n := l.Len()
		nodes := max(1, (n+127)/128)
		extra = fmt.Sprintf(" ql_nodes:%d ql_avg_node:%.2f ql_listpack_max:%d ql_compressed:%d ql_uncompressed_size:%d",
			nodes, float64(n)/float64(nodes), -2, 0, serialized)
	}
	addr := fmt.Sprintf("%p", e)
	unlock()
	idle := int64(0)
	if !strings.HasSuffix(c.srv.cfg.Get(DirMaxmemoryPolicy), "-lfu") {
		idle = max(0, time.Now().Unix()-int64(lru))
	}
	c.addSimple(fmt.Sprintf("Value at:%s refcount:1 encoding:%s serializedlength:%d lru:%d lru_seconds_idle:%d%s",
		addr, enc, serialized, lru&0xffffff, idle, extra))
}

// ---- DEBUG DIGEST ----------------------------------------------------------

// The dataset digest, computed as Redis's debug.c does so DEBUG DIGEST
// matches redis-server's for the same data: per key, SHA1 mixing of the
// key and its value (ordered for strings and lists, order-independent XOR
// for sets, hashes and sorted sets), XORed together; databases are mixed
// in by number.

type digest [20]byte

// xor folds SHA1(p) into d.
func (d *digest) xor(p []byte) {
	h := sha1.Sum(p)
	for i := range d {
		d[i] ^= h[i]
	}
}

// mix folds SHA1(p) into d, then replaces d by SHA1(d).
func (d *digest) mix(p []byte) {
	d.xor(p)
	*d = sha1.Sum(d[:])
}

func digestScore(f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return []byte("inf")
	case math.IsInf(f, -1):
		return []byte("-inf")
	}
	return strconv.AppendFloat(nil, f, 'g', 17, 64)
}

// objectDigest folds a value (and its having an expiry) into d.
func objectDigest(d *digest, e *keyspace.Entry) {
	var typ uint32
	switch o := e.Obj.(type) {
	case nil:
		d.mix(beUint32(typ))
		d.mix(e.Str)
	case *value.List:
		d.mix(beUint32(1))
		o.ForEach(func(v []byte) bool { d.mix(v); return true })
	case *value.Set:
		d.mix(beUint32(2))
		o.Each(func(m []byte) bool { d.xor(m); return true })
	case *value.ZSet:
		d.mix(beUint32(3))
		o.ForEach(func(m string, sc float64) bool {
			var ed digest
			ed.mix([]byte(m))
			ed.mix(digestScore(sc))
			d.xor(ed[:])
			return true
		})
	case *value.Hash:
		d.mix(beUint32(4))
		o.Each(func(f, v []byte) bool {
			var ed digest
			ed.mix(f)
			ed.mix(v)
			d.xor(ed[:])
			return true
		})
	}
	if e.Expire != 0 {
		d.xor([]byte("!!expire!!"))
	}
}

func beUint32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// DEBUG DIGEST
func debugDigest(c *Client, args [][]byte) {
	s := c.srv
	var final digest
	unlock := c.debugLockAll()
	for i, db := range s.dbs {
		if db.Size() == 0 {
			continue
		}
		final.mix(beUint32(uint32(i)))
		for j := range db.Shards {
			db.Shards[j].ForEach(func(e *keyspace.Entry) bool {
				var d digest
				d.mix([]byte(e.Key))
				objectDigest(&d, e)
				final.xor(d[:])
				return true
			})
		}
	}
	unlock()
	c.addSimple(hex.EncodeToString(final[:]))
}

// DEBUG DIGEST-VALUE key [key ...]
func debugDigestValue(c *Client, args [][]byte) {
	db := c.curDB()
	c.addArrayLen(len(args) - 2)
	for _, k := range args[2:] {
		key := string(k)
		sh := db.KeyShard(key)
		unlock := c.debugLockShard(&sh.Mu)
		var d digest
		if e := db.GetEntry(key); e != nil {
			objectDigest(&d, e)
		}
		unlock()
		c.addSimple(hex.EncodeToString(d[:]))
	}
}

// DEBUG LOADAOF: flush the AOF, empty the dataset and replay the AOF.
// The replay locks per command, so inside EXEC the block's locks are
// released for its duration (the only DEBUG subcommand that is not
// isolated inside a transaction).
func debugLoadAOF(c *Client, args [][]byte) {
	s := c.srv
	if c.inExec {
		held := c.releaseForWait()
		defer c.relockHeld(held)
	}
	if err := s.persist.AOF().Reload(); err != nil {
		s.log.Error("DEBUG LOADAOF failed", "err", err)
		c.addError("ERR " + err.Error())
		return
	}
	s.dirty.Store(0)
	s.log.Warn("Append Only File loaded by DEBUG LOADAOF")
	c.addOK()
}
