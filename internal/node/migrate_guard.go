package node

// The dispatcher's side of MIGRATE's key guards (migrate.Guards, whose
// doc states what they guarantee): a command that finds one of its keys
// guarded once it holds its locks releases them, waits, and locks again.

// guardOf returns the guard of the first guarded key among cmd's keys in
// the client's database, or nil.
func (c *Client) guardOf(cmd *command, args [][]byte) chan struct{} {
	g := &c.srv.keyGuards
	if cmd.keys != nil {
		for _, p := range cmd.keys(args) {
			if p < len(args) {
				if ch := g.Lookup(c.db, string(args[p])); ch != nil {
					return ch
				}
			}
		}
		return nil
	}
	if cmd.first <= 0 {
		return nil
	}
	last := cmd.last
	if last < 0 {
		last = len(args) + last
	}
	last = min(last, len(args)-1)
	for i := cmd.first; i <= last; i += max(cmd.step, 1) {
		if ch := g.Lookup(c.db, string(args[i])); ch != nil {
			return ch
		}
	}
	return nil
}

// guardOfMulti is guardOf for the commands queued in MULTI and the
// WATCHed keys.
func (c *Client) guardOfMulti() chan struct{} {
	saved := c.db
	defer func() { c.db = saved }()
	for _, q := range c.multi {
		cmd := c.srv.queuedCommand(q)
		if cmd == nil {
			continue
		}
		if cmd.name == "select" && len(q) == 2 {
			if n, ok := parseInt(q[1]); ok && n >= 0 && int(n) < len(c.srv.dbs) {
				c.db = int(n)
			}
			continue
		}
		if ch := c.guardOf(cmd, q); ch != nil {
			return ch
		}
	}
	for _, wk := range c.watched {
		if ch := c.srv.keyGuards.Lookup(wk.db, wk.key); ch != nil {
			return ch
		}
	}
	return nil
}

// settleLocked runs once a command holds its locks: it waits out the key
// guards of its keys (relock takes the same locks again) and, in cluster
// mode, repeats the slot check under the locks when the dispatcher's
// check (which set slotRoute) saw a migrating or importing slot or the
// routing changed since. It returns
// the redirect error to reply instead of running the command, or "".
func (c *Client) settleLocked(cmd *command, args [][]byte, guard func() chan struct{}, relock func()) string {
	s := c.srv
	for s.keyGuards.Count() != 0 {
		ch := guard()
		if ch == nil {
			break
		}
		c.unlockHeld()
		s.keyGuards.Wait(ch)
		relock()
	}
	rt := c.slotRoute
	c.slotRoute = nil
	if rt == nil || !c.slotRecheck && s.cluster.Routing() == rt {
		return ""
	}
	return c.clusterCheck(cmd, args, true)
}
