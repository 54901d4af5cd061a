package node

import (
	"github.com/shardis/shardis/internal/node/grammar"
	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/value"
)

// Helpers shared by the collection families (hash, set, ...): typed
// lookups and member removal with Redis's bookkeeping.

// lookupValue returns the value of type T at key: (zero, true) when the
// key is missing, ok=false (after replying WRONGTYPE) when it holds another
// type. Reads (read=true) count keyspace hits and misses and notify
// "keymiss", as Redis's lookupKeyRead does.
func lookupValue[T value.Value](c *Client, key []byte, read bool) (v T, ok bool) {
	v, e, err := keyspace.ValueAt[T](c.curDB(), string(key), c.now)
	if read {
		if e == nil {
			c.srv.stats.keyspaceMisses.Add(1)
			c.notify(notifyKeyMiss, "keymiss", bstr(key))
		} else {
			c.srv.stats.keyspaceHits.Add(1)
		}
	}
	if err != nil {
		c.addError(err.Error())
		return v, false
	}
	return v, true
}

// removeMembersCommand is HDEL and SREM (key member [member ...]): it
// deletes the members from the collection at key with del and replies how
// many went. The key goes when the collection empties (the remaining
// members are not looked at); when anything was removed the key is
// signalled, event notified (then "del" if the key went) and the changes
// counted.
func removeMembersCommand[T interface {
	value.Value
	Len() int
}](c *Client, args [][]byte, del func(T, []byte) bool, class int, event string) {
	db := c.curDB()
	key := string(args[1])
	coll, e, err := keyspace.ValueAt[T](db, key, c.now)
	if err != nil {
		c.addError(err.Error())
		return
	}
	if e == nil {
		c.addInt(0)
		return
	}
	deleted, removed := 0, false
	for _, m := range args[2:] {
		if del(coll, m) {
			deleted++
			if coll.Len() == 0 {
				db.Remove(key)
				removed = true
				break
			}
		}
	}
	if deleted > 0 {
		c.signalModifiedKey(key)
		c.notify(class, event, key)
		if removed {
			c.notify(notifyGeneric, "del", key)
		}
		c.markDirty(deleted)
	}
	c.addInt(int64(deleted))
}

// typeOf returns the TYPE of an entry.
func typeOf(e *keyspace.Entry) string {
	if e.Obj == nil {
		return "string"
	}
	if tv, ok := e.Obj.(value.Value); ok {
		return tv.TypeName()
	}
	return "none"
}

// encodingOf returns the OBJECT ENCODING of an entry (Entry.Encoding).
func encodingOf(e *keyspace.Entry) string { return e.Encoding() }

// hashLimits reads the thresholds from the server's configuration.
func (s *Server) hashLimits() value.HashLimits {
	return s.hot().hashLim
}

// intsetLimit reads set-max-intset-entries from the configuration.
func (s *Server) intsetLimit() int { return s.hot().intsetLimit }

// addErr replies with a parse error of internal/node/grammar (whose text
// is Redis's reply).
func (c *Client) addErr(err error) { c.addError(err.Error()) }

// parseMPop parses the "numkeys key [key ...] END [COUNT count]" of
// LMPOP/BLMPOP (END first or second: LEFT|RIGHT) and ZMPOP/BZMPOP
// (MIN|MAX) from args[i:]; on error it replies and returns ok=false.
func parseMPop(c *Client, args [][]byte, i int, first, second string) (grammar.MPop, bool) {
	o, err := grammar.ParseMPop(args, i, first, second)
	if err != nil {
		c.addErr(err)
		return o, false
	}
	return o, true
}
