package node

import (
	"crypto/rand"

	"github.com/shardis/shardis/internal/node/acl"
	"github.com/shardis/shardis/internal/node/config"
)

func registerACLCommands(t *commandTable) {
	t.add(&command{name: "acl", arity: -2, fn: cmdHelpDispatch, group: "server", since: "6.0.0"})
	af := flagAdmin | flagNoScript | flagLoading | flagStale
	pf := flagNoScript | flagLoading | flagStale
	t.addSub("acl", &command{name: "cat", arity: -2, flags: pf, fn: cmdACLCat, since: "6.0.0"})
	t.addSub("acl", &command{name: "deluser", arity: -3, flags: af, fn: cmdACLDelUser, since: "6.0.0"})
	t.addSub("acl", &command{name: "dryrun", arity: -4, flags: af, fn: cmdACLDryRun, since: "7.0.0"})
	t.addSub("acl", &command{name: "genpass", arity: -2, flags: pf, fn: cmdACLGenPass, since: "6.0.0"})
	t.addSub("acl", &command{name: "getuser", arity: 3, flags: af, fn: cmdACLGetUser, since: "6.0.0"})
	t.addSub("acl", &command{name: "help", arity: 2, flags: flagLoading | flagStale, fn: cmdACLHelp, since: "6.0.0"})
	t.addSub("acl", &command{name: "list", arity: 2, flags: af, fn: cmdACLList, since: "6.0.0"})
	t.addSub("acl", &command{name: "load", arity: 2, flags: af, fn: cmdACLLoad, since: "6.0.0"})
	t.addSub("acl", &command{name: "log", arity: -2, flags: af, fn: cmdACLLog, since: "6.0.0"})
	t.addSub("acl", &command{name: "save", arity: 2, flags: af, fn: cmdACLSave, since: "6.0.0"})
	t.addSub("acl", &command{name: "setuser", arity: -3, flags: af, fn: cmdACLSetUser, since: "6.0.0"})
	t.addSub("acl", &command{name: "users", arity: 2, flags: af, fn: cmdACLUsers, since: "6.0.0"})
	t.addSub("acl", &command{name: "whoami", arity: 2, flags: pf, fn: cmdACLWhoAmI, since: "6.0.0"})
}

// ACL SETUSER username [rule ...]
func cmdACLSetUser(c *Client, args [][]byte) {
	s := c.srv
	rules := make([]string, 0, len(args)-3)
	for _, a := range args[3:] {
		rules = append(rules, string(a))
	}
	nu, old, err := s.acl.SetUser(string(args[2]), rules)
	if err != nil {
		c.addError("ERR " + err.Error())
		return
	}
	if old != nil {
		s.aclKillSubscribers(c, nu, old)
	}
	c.addOK()
}

// ACL DELUSER username [username ...]
func cmdACLDelUser(c *Client, args [][]byte) {
	for _, a := range args[2:] {
		if string(a) == "default" {
			c.addError(acl.ErrDeleteDefault)
			return
		}
	}
	s := c.srv
	gone := s.acl.DelUsers(args[2:])
	if len(gone) > 0 {
		s.aclDisconnect(c, gone)
	}
	c.addInt(int64(len(gone)))
}

// ACL GETUSER username
func cmdACLGetUser(c *Client, args [][]byte) {
	u, sels := c.srv.acl.GetUser(string(args[2]))
	if u == nil {
		c.addNull()
		return
	}
	c.addAppended(func(b []byte, proto int) []byte { return acl.AppendUser(b, proto, u, sels) })
}

// ACL LIST
func cmdACLList(c *Client, args [][]byte) {
	lines := c.srv.acl.ConfigLines()
	c.addArrayLen(len(lines))
	for _, l := range lines {
		c.addBulkString(l)
	}
}

// ACL USERS
func cmdACLUsers(c *Client, args [][]byte) {
	names := c.srv.acl.Names()
	c.addArrayLen(len(names))
	for _, n := range names {
		c.addBulkString(n)
	}
}

// ACL WHOAMI
func cmdACLWhoAmI(c *Client, args [][]byte) {
	c.infoMu.Lock()
	name := c.user
	c.infoMu.Unlock()
	c.addBulkString(name)
}

// ACL LOAD: the aclfile replaces every user; the clients of the old users
// other than default are disconnected.
func cmdACLLoad(c *Client, args [][]byte) {
	s := c.srv
	if s.cfg.Get(config.DirAclfile) == "" {
		c.addError(acl.ErrNoACLFile)
		return
	}
	before := s.acl.Names()
	if err := s.aclLoadFile(); err != nil {
		c.addError("ERR " + err.Error())
		return
	}
	gone := map[string]bool{}
	for _, n := range before {
		if n != "default" {
			gone[n] = true
		}
	}
	s.aclDisconnect(c, gone)
	c.addOK()
}

// ACL SAVE
func cmdACLSave(c *Client, args [][]byte) {
	if c.srv.cfg.Get(config.DirAclfile) == "" {
		c.addError(acl.ErrNoACLFile)
		return
	}
	if err := c.srv.aclSaveFile(); err != nil {
		c.addError(acl.ErrSave)
		return
	}
	c.addOK()
}

// ACL CAT [category]
func cmdACLCat(c *Client, args [][]byte) {
	if len(args) == 2 {
		c.addArrayLen(len(acl.Categories))
		for _, n := range acl.Categories {
			c.addBulkString(n)
		}
		return
	}
	if len(args) > 3 {
		clusterSubSyntaxError(c, args)
		return
	}
	cat, msg := acl.ParseCategory(string(args[2]))
	if msg != "" {
		c.addError(msg)
		return
	}
	names := c.srv.acl.Reg.Table().InCategory(cat)
	c.addArrayLen(len(names))
	for _, n := range names {
		c.addBulkString(n)
	}
}

// ACL GENPASS [bits]
func cmdACLGenPass(c *Client, args [][]byte) {
	if len(args) > 3 {
		clusterSubSyntaxError(c, args)
		return
	}
	bits, msg := acl.ParseGenPassBits(args)
	if msg != "" {
		c.addError(msg)
		return
	}
	buf := make([]byte, (bits+7)/8+1)
	_, _ = rand.Read(buf)
	c.addBulkString(acl.GenPass(buf, bits))
}

// ACL LOG [count | RESET]
func cmdACLLog(c *Client, args [][]byte) {
	if len(args) > 3 {
		clusterSubSyntaxError(c, args)
		return
	}
	s := c.srv
	count, reset, msg := acl.ParseLog(args)
	if msg != "" {
		c.addError(msg)
		return
	}
	entries := s.acl.LogEntries(count, reset)
	if reset {
		c.addOK()
		return
	}
	now := c.srv.nowMs()
	c.addAppended(func(b []byte, proto int) []byte { return acl.AppendLog(b, proto, entries, now) })
}

// ACL DRYRUN username command [arg ...]
func cmdACLDryRun(c *Client, args [][]byte) {
	s := c.srv
	u, _ := s.acl.User(string(args[2]))
	if u == nil {
		c.addError("ERR User '" + string(args[2]) + "' not found")
		return
	}
	call := args[3:]
	cmd := s.lookupACLCall(call)
	if cmd == nil {
		c.addError("ERR Command '" + string(call[0]) + "' not found")
		return
	}
	if !arityOK(cmd, len(call)) {
		c.addError("ERR wrong number of arguments for '" + cmd.fullName() + "' command")
		return
	}
	res, pos := s.aclCheckUser(u, cmd, call)
	if res == acl.OK {
		c.addOK()
		return
	}
	c.addBulkString(acl.DryRunText(res, cmd.fullName(), string(call[pos])))
}

// aclCheckUser checks a call for any user (ACL DRYRUN,
// redis.acl_check_cmd).
func (s *Server) aclCheckUser(u *acl.User, cmd *command, args [][]byte) (acl.Result, int) {
	if cmd.acl == nil {
		return acl.OK, 0
	}
	call := acl.Call{Cmd: cmd.acl, Args: args}
	if u.NeedsKeys() {
		call.Keys = appendACLKeys(nil, cmd, args)
	}
	if cmd.flags&flagPubSub != 0 && u.NeedsChannels() {
		call.Channels = acl.AppendChannels(nil, cmd.fullName(), len(args))
	}
	return s.acl.Reg.Check(u, &call)
}

// ACL HELP
func cmdACLHelp(c *Client, args [][]byte) { c.addHelp("ACL", acl.Help) }
