package script

import (
	"sync"

	"github.com/shardis/shardis/internal/node/keyopts"
	"github.com/shardis/shardis/internal/node/keyspace"
)

// Undo is a forked debugging session's record (SCRIPT DEBUG YES) of the
// keys its writes may change: each key's entry as it was before the
// first of them (nil: the key did not exist), put back when the session
// ends. Create it with NewUndo.
type Undo struct {
	// mu guards saved, which other clients' notifications read (Muted);
	// only the session adds to it.
	mu    sync.Mutex
	saved map[undoKey]*keyspace.Entry
}

type undoKey struct {
	db  int
	key string
}

// NewUndo returns an empty record.
func NewUndo() *Undo { return &Undo{saved: make(map[undoKey]*keyspace.Entry)} }

// Muted reports whether key's events come from the session (u may be
// nil: no session): while it runs the session holds the locks of every
// key it saved, so only it changes them.
func (u *Undo) Muted(db int, key string) bool {
	if u == nil {
		return false
	}
	u.mu.Lock()
	_, ok := u.saved[undoKey{db, key}]
	u.mu.Unlock()
	return ok
}

// Save records key of database dbIndex (d) as it is now, the first time
// the session is about to change it; the key's lock is held.
func (u *Undo) Save(dbIndex int, d *keyspace.DB, key string) {
	k := undoKey{dbIndex, key}
	if _, ok := u.saved[k]; ok {
		return
	}
	var cp *keyspace.Entry
	if e := d.GetEntry(key); e != nil {
		cp = keyopts.CopyEntry(e)
	}
	u.mu.Lock()
	u.saved[k] = cp
	u.mu.Unlock()
}

// Restore puts every saved key back as it was, in dbs (indexed as the
// saves were); the session's locks are still held.
func (u *Undo) Restore(dbs []*keyspace.DB) {
	for k, e := range u.saved {
		db := dbs[k.db]
		db.SnapTouchKey(k.key)
		db.Remove(k.key)
		if e != nil {
			db.Add(k.key, e)
		}
	}
	u.mu.Lock()
	u.saved = nil
	u.mu.Unlock()
}
