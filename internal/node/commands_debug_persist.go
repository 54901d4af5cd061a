package node

import (
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/shardis/shardis/internal/node/admin"
	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/persist"
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
	c.now = c.srv.nowMs()
	e := db.GetEntry(key) // as Redis's dictFind: no expiry check (a replica keeps expired keys)
	if e == nil {
		unlock()
		c.addError(errNoSuchKey)
		return
	}
	v := entryValue(e)
	payload := rdb.Dump(v, c.srv.cfg.Bool(config.DirRdbcompression), c.srv.rdbLimits())
	serialized := len(payload) - 11
	enc := encodingOf(e)
	lru := e.LRU
	listLen := -1
	if l, ok := e.Obj.(*value.List); ok {
		listLen = l.Len()
	}
	addr := fmt.Sprintf("%p", e)
	unlock()
	idle := int64(0)
	if !strings.HasSuffix(c.srv.cfg.Get(config.DirMaxmemoryPolicy), "-lfu") {
		idle = max(0, c.srv.now().Unix()-int64(lru))
	}
	c.addSimple(admin.DebugObjectLine(addr, enc, serialized, int64(lru), idle, listLen))
}

// DEBUG DIGEST
func debugDigest(c *Client, args [][]byte) {
	unlock := c.debugLockAll()
	d := persist.DatasetDigest(c.srv.dbs)
	unlock()
	c.addSimple(hex.EncodeToString(d[:]))
}

// DEBUG DIGEST-VALUE key [key ...]
func debugDigestValue(c *Client, args [][]byte) {
	db := c.curDB()
	c.addArrayLen(len(args) - 2)
	for _, k := range args[2:] {
		key := string(k)
		sh := db.KeyShard(key)
		unlock := c.debugLockShard(&sh.Mu)
		var d persist.Digest
		if e := db.GetEntry(key); e != nil {
			d = persist.ValueDigest(e)
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
