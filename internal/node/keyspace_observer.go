package node

// ksObserver receives the keyspace's reports (the keyspace's Observer):
// what Redis's db.c does around a key's expiry and creation.
type ksObserver struct{ s *Server }

// Expired counts an expired key deleted by a lookup or active expiry,
// propagates its DEL, notifies "expired" and touches WATCH.
func (o ksObserver) Expired(db int, key string) {
	s := o.s
	s.stats.expiredKeys.Add(1)
	s.propagateExpired(db, key)
	s.notifyKeyspaceEvent(notifyExpired, "expired", key, db)
	s.touchWatchedKey(db, key)
}

// Added wakes clients blocked on a new key and sends the "new" event
// (Redis's dbAdd; not while loading).
func (o ksObserver) Added(db int, key string, obj any) {
	s := o.s
	s.keyAdded(db, key, obj)
	if !s.loading.Load() {
		s.notifyKeyspaceEvent(notifyNew, "new", key, db)
	}
}
