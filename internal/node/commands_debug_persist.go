package node

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/shardis/shardis/internal/rdb"
)

// DEBUG subcommands of persistence, registered through RegisterDebug:
// RELOAD (save, flush, load the RDB file back) and OBJECT (a key's
// low-level details).

func registerPersistenceDebug(s *Server) {
	s.RegisterDebug("reload", debugReload)
	s.RegisterDebug("object", debugObject)
}

// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]
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
	if save {
		if err := p.save(); err != nil {
			c.addError("ERR " + err.Error())
			return
		}
	}
	f, err := os.Open(p.rdbPath())
	if err != nil {
		c.addError("ERR Error trying to load the RDB dump, check server logs.")
		return
	}
	defer f.Close()
	s.loading.Store(true)
	s.LockAll()
	s.snapGuardAll()
	if flush {
		for _, db := range s.dbs {
			db.flush()
		}
	}
	h := s.rdbHandler()
	if merge {
		h.Key = s.mergeKeyHandler(h.Key)
	}
	_, err = rdb.Parse(f, h)
	s.UnlockAll()
	s.loading.Store(false)
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
		s.dbs[e.DB].remove(string(e.Key))
		return next(e)
	}
}

// snapGuardAll copies, into every open snapshot, every shard not copied
// yet. All shard locks must be held (whole-keyspace replacements).
func (s *Server) snapGuardAll() {
	if s.persist == nil || len(*s.persist.snaps.Load()) == 0 {
		return
	}
	for _, db := range s.dbs {
		for i := range db.shards {
			s.snapGuard([]*sync.Mutex{&db.shards[i].mu})
		}
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
	sh := &db.shards[shardOf(key)]
	sh.mu.Lock()
	c.now = time.Now().UnixMilli()
	e := db.lookup(key, c.now)
	if e == nil {
		sh.mu.Unlock()
		c.addError(errNoSuchKey)
		return
	}
	v := entryValue(e)
	payload := rdb.Dump(v, c.srv.cfg.Bool("rdbcompression"), c.srv.rdbLimits())
	serialized := len(payload) - 11
	enc := encodingOf(e)
	lru := e.lru
	extra := ""
	if l, ok := e.obj.(*listValue); ok {
		n := l.Len()
		nodes := max(1, (n+127)/128)
		extra = fmt.Sprintf(" ql_nodes:%d ql_avg_node:%.2f ql_listpack_max:%d ql_compressed:%d ql_uncompressed_size:%d",
			nodes, float64(n)/float64(nodes), -2, 0, serialized)
	}
	addr := fmt.Sprintf("%p", e)
	sh.mu.Unlock()
	idle := int64(0)
	if !strings.HasSuffix(c.srv.cfg.Get("maxmemory-policy"), "-lfu") {
		idle = max(0, time.Now().Unix()-int64(lru))
	}
	c.addSimple(fmt.Sprintf("Value at:%s refcount:1 encoding:%s serializedlength:%d lru:%d lru_seconds_idle:%d%s",
		addr, enc, serialized, lru&0xffffff, idle, extra))
}
