package node

// Helpers shared by the collection families (hash, set, list...): typed
// lookups and member removal with Redis's bookkeeping.

// lookupValue returns the value of type T at key: (zero, true) when the
// key is missing, ok=false (after replying WRONGTYPE) when it holds another
// type. Reads (read=true) count keyspace hits and misses and notify
// "keymiss", as Redis's lookupKeyRead does.
func lookupValue[T typedValue](c *Client, key []byte, read bool) (v T, ok bool) {
	e := c.curDB().lookup(string(key), c.now)
	if e == nil {
		if read {
			c.srv.stats.keyspaceMisses.Add(1)
			c.notify(notifyKeyMiss, "keymiss", bstr(key))
		}
		return v, true
	}
	if read {
		c.srv.stats.keyspaceHits.Add(1)
	}
	v, ok = e.obj.(T)
	if !ok {
		c.addError(errWrongType)
	}
	return v, ok
}

// sized is a collection that knows its length.
type sized interface{ Len() int }

// removeMembers deletes members from coll (an existing collection) with
// del, as HDEL and SREM do: the key goes when the collection empties
// (remaining members are not looked at), and when anything was removed the
// key is signalled, event is notified (then "del" if the key went) and the
// changes counted. It returns the number removed.
func (c *Client) removeMembers(key []byte, members [][]byte, coll sized, del func([]byte) bool, class int, event string) int {
	deleted, removed := 0, false
	for _, m := range members {
		if del(m) {
			deleted++
			if coll.Len() == 0 {
				c.curDB().remove(string(key))
				removed = true
				break
			}
		}
	}
	if deleted > 0 {
		k := string(key)
		c.signalModifiedKey(k)
		c.notify(class, event, k)
		if removed {
			c.notify(notifyGeneric, "del", k)
		}
		c.markDirty(deleted)
	}
	return deleted
}
