package node

import (
	"bytes"

	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/sortspec"
	"github.com/shardis/shardis/internal/node/value"
)

// SORT and SORT_RO. BY and GET patterns read arbitrary keys of the current
// database, so both commands lock the whole database (flagLockDB); their
// key metadata (the sorted key and STORE's destination) still describes
// them for COMMAND GETKEYS. The grammar and the ordering are package
// sortspec; this handler reads the keys and replies.

func registerSortCommands(t *commandTable) {
	t.add(&command{name: "sort", arity: -2, flags: flagWrite | flagDenyOOM | flagLockDB, keys: sortspec.Keys, first: 1, last: 1, step: 1, fn: cmdSort, group: "generic", since: "1.0.0"})
	// SORT_RO's only key is the sorted one, yet Redis flags it movablekeys.
	t.add(&command{name: "sort_ro", arity: -2, flags: flagReadOnly | flagLockDB, keys: func([][]byte) []int { return []int{1} }, first: 1, last: 1, step: 1, fn: cmdSortRO, group: "generic", since: "7.0.0"})
}

// SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA] [STORE destination]
func cmdSort(c *Client, args [][]byte) { sortGeneric(c, args, false) }

// SORT_RO key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA]
func cmdSortRO(c *Client, args [][]byte) { sortGeneric(c, args, true) }

func sortGeneric(c *Client, args [][]byte, readonly bool) {
	env := sortspec.Env{ReadOnly: readonly, Cluster: c.srv.cfg.Bool(config.DirClusterEnabled), FullKeyRead: func() bool { return c.aclFullKeyRead(args) }}
	s, err := sortspec.Parse(args[2:], env)
	if err != nil {
		c.addError(err.Error())
		return
	}
	db := c.curDB()
	var elems [][]byte
	isSet := false
	if e := db.Lookup(string(args[1]), c.now); e != nil {
		switch v := e.Obj.(type) {
		case *value.List:
			v.ForEach(func(b []byte) bool { elems = append(elems, b); return true })
		case *value.Set:
			isSet = true
			v.ForEach(func(m string) bool { elems = append(elems, []byte(m)); return true })
		case *value.ZSet:
			v.ForEach(func(m string, _ float64) bool { elems = append(elems, []byte(m)); return true })
		default:
			c.addError(errWrongType)
			return
		}
	}
	s.ForceAlpha(isSet, c.inScript)
	items, err := s.Sort(elems, isSet, c.sortLookup)
	if err != nil {
		c.addError(err.Error())
		return
	}
	start, end := s.Window(int64(len(items)))
	count := max(end-start+1, 0)
	outputLen := count
	if len(s.Gets) > 0 {
		outputLen = int64(len(s.Gets)) * count
	}
	if s.Store == "" {
		c.addArrayLen(int(outputLen))
		for j := start; j <= end; j++ {
			if len(s.Gets) == 0 {
				c.addBulk(items[j].Val)
			}
			for _, g := range s.Gets {
				if v, ok := c.sortLookup(g, items[j].Val); ok {
					c.addBulk(v)
				} else {
					c.addNull()
				}
			}
		}
		return
	}
	c.sortStore(&s, items[max(start, 0):max(end+1, 0)], outputLen)
}

// sortStore writes SORT ... STORE's result list (replacing or deleting
// the destination) and replies its length.
func (c *Client) sortStore(s *sortspec.Spec, items []sortspec.Item, outputLen int64) {
	db, store := c.curDB(), s.Store
	l := value.NewList()
	for _, it := range items {
		if len(s.Gets) == 0 {
			l.PushBack(bytes.Clone(it.Val))
		}
		for _, g := range s.Gets {
			v, _ := c.sortLookup(g, it.Val)
			l.PushBack(bytes.Clone(v))
		}
	}
	if outputLen > 0 {
		db.SetObject(store, l)
		c.signalModifiedKey(store)
		c.notify(notifyList, "sortstore", store)
		c.signalKeyAsReady(store)
		c.markDirty(int(outputLen))
	} else if db.Lookup(store, c.now) != nil {
		db.Remove(store)
		c.keyChanged(notifyGeneric, "del", store)
	}
	c.addInt(outputLen)
}

// sortLookup reads a BY/GET pattern for element elem: the element itself
// for "#", else the substituted key's string or hash field; ok is false
// when there is nothing (no '*', missing key, wrong type, missing field).
func (c *Client) sortLookup(pattern, elem []byte) ([]byte, bool) {
	p, ok := sortspec.Substitute(pattern, elem)
	if !ok {
		return nil, false
	}
	if p.Self {
		return elem, true
	}
	e := c.curDB().Lookup(string(p.Key), c.now)
	if e == nil {
		return nil, false
	}
	if p.Field != nil {
		h, ok := e.Obj.(*value.Hash)
		if !ok {
			return nil, false
		}
		return h.Get(string(p.Field))
	}
	if e.Obj != nil {
		return nil, false
	}
	return e.Str, true
}
