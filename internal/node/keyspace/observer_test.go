package keyspace

import (
	"slices"
	"testing"

	"github.com/shardis/shardis/internal/node/value"
)

// recordingObserver records every report.
type recordingObserver struct{ events []string }

func (o *recordingObserver) Expired(db int, key string) {
	o.events = append(o.events, "expired "+key)
}

func (o *recordingObserver) Added(db int, key string, obj any) {
	kind := "string"
	if v, ok := obj.(value.Value); ok {
		kind = v.TypeName()
	}
	o.events = append(o.events, "added "+key+" "+kind)
}

// TestObserverReports: the keyspace reports a key added (not in a staged
// database) and an expired key deleted by a lookup on a master; a replica
// hides the key and reports nothing; removing a key reports nothing (the
// command that removed it notifies).
func TestObserverReports(t *testing.T) {
	obs := &recordingObserver{}
	sh := NewShared(obs)
	db, staged := NewDB(sh, 0), NewDB(sh, 1)
	staged.Staged = true
	const now = 5000
	lock := func(d *DB, k string) func() {
		s := &d.Shards[ShardOf(k)]
		s.Mu.Lock()
		return s.Mu.Unlock
	}
	u := lock(db, "s")
	db.SetString("s", []byte("v"), now-1, false)
	u()
	u = lock(db, "h")
	db.SetObject("h", value.NewHash())
	u()
	u = lock(staged, "x")
	staged.SetString("x", []byte("v"), 0, false)
	u()
	sh.SetHideExpired(true)
	u = lock(db, "s")
	if db.Lookup("s", now) != nil {
		t.Fatal("a replica's lookup returned an expired key")
	}
	u()
	sh.SetHideExpired(false)
	u = lock(db, "s")
	if db.Lookup("s", now) != nil {
		t.Fatal("a master's lookup returned an expired key")
	}
	if db.GetEntry("s") != nil {
		t.Fatal("the expired key is still there")
	}
	u()
	u = lock(db, "h")
	db.Remove("h")
	u()
	want := []string{"added s string", "added h hash", "expired s"}
	if !slices.Equal(obs.events, want) {
		t.Fatalf("reports %q, want %q", obs.events, want)
	}
	u = lock(staged, "x")
	_, e, err := ValueAt[*value.Hash](staged, "x", now)
	u()
	if err != ErrWrongType || e == nil {
		t.Fatalf("ValueAt on a string: %v, want ErrWrongType", err)
	}
}
