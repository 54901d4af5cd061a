package node

import (
	"strconv"
)

// registerReplicationDebug adds the DEBUG subcommands Redis's replication
// tests rely on.
func registerReplicationDebug(s *Server) {
	s.RegisterDebug("populate", debugPopulate)
	s.RegisterDebug("trace", debugTrace) // debug_trace.go: for the lag diagnosis
}

// DEBUG POPULATE count [prefix] [size]: creates string keys prefix:N
// (default "key:N") holding "value:N", zero-padded or cut to size bytes
// when size is given. Existing keys are left alone. Nothing is
// propagated, as in Redis.
func debugPopulate(c *Client, args [][]byte) {
	if len(args) < 3 || len(args) > 5 {
		debugSyntaxError(c, args)
		return
	}
	count, ok := parseInt(args[2])
	if !ok {
		c.addError(errNotInt)
		return
	}
	if count < 0 {
		c.addError("ERR count must be greater than or equal to 0")
		return
	}
	prefix := "key"
	if len(args) > 3 {
		prefix = string(args[3])
	}
	size := int64(0)
	if len(args) > 4 {
		n, ok := parseInt(args[4])
		if !ok || n < 0 {
			c.addError(errNotInt)
			return
		}
		size = n
	}
	db := c.curDB()
	var kb, vb []byte
	for j := int64(0); j < count; j++ {
		kb = strconv.AppendInt(append(append(kb[:0], prefix...), ':'), j, 10)
		key := string(kb)
		unlock := c.debugLockShard(&db.KeyShard(key).Mu)
		if db.GetEntry(key) == nil {
			vb = strconv.AppendInt(append(vb[:0], "value:"...), j, 10)
			var val []byte
			if size == 0 {
				val = append([]byte(nil), vb...)
			} else {
				val = make([]byte, size)
				copy(val, vb)
			}
			db.SetString(key, val, 0, false)
		}
		unlock()
	}
	c.addOK()
}
