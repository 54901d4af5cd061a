package node

import "github.com/shardis/shardis/internal/node/repl"

// registerReplicationDebug adds the DEBUG subcommands Redis's replication
// tests rely on.
func registerReplicationDebug(s *Server) {
	s.RegisterDebug("populate", debugPopulate)
	s.RegisterDebug("trace", debugTrace)     // debug_trace.go: for the lag diagnosis
	s.RegisterDebug("profile", debugProfile) // debug_trace.go: CPU and allocation profiles
}

// DEBUG POPULATE count [prefix] [size]: creates string keys prefix:N
// (default "key:N") holding "value:N", zero-padded or cut to size bytes
// when size is given. Existing keys are left alone. Nothing is
// propagated, as in Redis.
func debugPopulate(c *Client, args [][]byte) {
	p, e, syntax := repl.ParsePopulate(args)
	switch {
	case syntax:
		debugSyntaxError(c, args)
		return
	case e != "":
		c.addError(e)
		return
	}
	db := c.curDB()
	var kb []byte
	for j := int64(0); j < p.Count; j++ {
		kb = p.Key(kb, j)
		key := string(kb)
		unlock := c.debugLockShard(&db.KeyShard(key).Mu)
		if db.GetEntry(key) == nil {
			db.SetString(key, p.Value(j), 0, false)
		}
		unlock()
	}
	c.addOK()
}
