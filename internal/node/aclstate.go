package node

import (
	"fmt"
	"strings"

	"github.com/shardis/shardis/internal/node/acl"
	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/pubsub"
)

// aclState is the server's side of ACLs (acl.State): the registry of
// users, the ACL LOG, and the generation clients compare to notice that
// users changed.
type aclState = acl.State

// initACL builds the registry from the command table, applies
// requirepass, acl-pubsub-default, the user directives and the aclfile,
// as Redis's ACLLoadUsersAtStartup.
func (s *Server) initACL() error {
	var top []*acl.Command
	for _, cmd := range s.table.cmds {
		ac := aclCommandOf(cmd)
		for _, sub := range cmd.subs {
			sc := aclCommandOf(sub)
			ac.Subs = append(ac.Subs, sc)
		}
		top = append(top, ac)
	}
	t := acl.NewTable(top)
	for _, cmd := range s.table.cmds {
		cmd.acl = t.Lookup(cmd.name)
		for _, sub := range cmd.subs {
			sub.acl = t.Lookup(sub.fullName())
		}
	}
	a := &s.acl
	a.Reg = acl.NewRegistry(t, func(p, str string) bool { return globMatch(p, str, false) })
	a.Reg.PubsubDefaultAll = s.cfg.Get(config.DirAclPubsubDefault) == "allchannels"
	if pw := s.cfg.Get(config.DirRequirepass); pw != "" {
		a.Reg.SetDefaultPassword(pw)
	}
	users := s.cfg.Users()
	file := s.cfg.Get(config.DirAclfile)
	if file != "" && len(users) > 0 {
		return fmt.Errorf("node: acl: Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both")
	}
	if err := a.Reg.LoadConfigured(users); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if file != "" {
		if err := s.aclLoadFile(); err != nil {
			return fmt.Errorf("node: acl: Aborting Redis startup because of ACL errors: %w", err)
		}
	}
	a.AuthRequired.Store(a.Reg.AuthRequired())
	return nil
}

// aclCommandOf is cmd as package acl sees it: name, categories, no-auth.
func aclCommandOf(cmd *command) *acl.Command {
	var cats acl.Category
	for _, c := range cmd.aclCategories() {
		cats |= acl.CategoryByName(strings.TrimPrefix(c, "@"))
	}
	return &acl.Command{FullName: cmd.fullName(), Categories: cats, NoAuth: cmd.flags&flagNoAuth != 0}
}

// aclChanged publishes a change of the users: clients re-read theirs.
// Called with s.acl.Mu held.
func (s *Server) aclChanged() { s.acl.Changed() }

// setClientUser makes u the client's user (AUTH, HELLO AUTH, a new
// connection).
func (c *Client) setClientUser(u *acl.User, gen uint64) {
	c.aclUser, c.aclGen = u, gen
	c.aclFree = u == nil || u.Unrestricted()
	name := "default"
	if u != nil {
		name = u.Name
	}
	c.infoMu.Lock()
	c.user = name
	c.infoMu.Unlock()
}

// refreshUser re-reads the client's user after a change of the users.
func (c *Client) refreshUser() {
	a := &c.srv.acl
	a.Mu.Lock()
	gen := a.Gen.Load()
	var u *acl.User
	if c.aclUser != nil {
		u = a.Reg.User(c.aclUser.Name)
	}
	a.Mu.Unlock()
	if u == nil {
		// Deleted: the client is being disconnected; until then it runs
		// nothing.
		c.aclUser, c.aclGen, c.aclFree = nil, gen, false
		c.aclDeleted = true
		return
	}
	c.aclUser, c.aclGen = u, gen
	c.aclFree = u.Unrestricted()
}

// aclCheck checks cmd with args for the client's user and returns the
// result and the position of the refused key or channel.
func (c *Client) aclCheck(cmd *command, args [][]byte) (acl.Result, int) {
	if c.aclGen != c.srv.acl.Gen.Load() && (c.aclUser != nil || c.aclDeleted) {
		c.refreshUser()
	}
	if c.aclDeleted {
		return acl.DeniedCmd, 0
	}
	u := c.aclUser
	if u == nil || c.aclFree || c.hasFlag(clientMaster) {
		return acl.OK, 0
	}
	call := acl.Call{Cmd: cmd.acl, Args: args}
	if call.Cmd == nil {
		return acl.OK, 0 // a command the table did not have when users were built
	}
	if u.NeedsKeys() {
		c.aclKeyBuf = appendACLKeys(c.aclKeyBuf[:0], cmd, args)
		call.Keys = c.aclKeyBuf
	}
	if cmd.flags&flagPubSub != 0 && u.NeedsChannels() {
		c.aclChanBuf = acl.AppendChannels(c.aclChanBuf[:0], cmd.fullName(), len(args))
		call.Channels = c.aclChanBuf
	}
	return c.srv.acl.Reg.Check(u, &call)
}

// appendACLKeys appends the keys of a call with the permissions their key
// specs need (access: read; insert, delete, update: write).
func appendACLKeys(out []acl.KeyRef, cmd *command, args [][]byte) []acl.KeyRef {
	add := func(p int) {
		if p < len(args) {
			if perm := cmd.keyPerm(args, p); perm >= 0 {
				out = append(out, acl.KeyRef{Pos: p, Perm: perm})
			}
		}
	}
	if cmd.keys != nil {
		for _, p := range cmd.keys(args) {
			add(p)
		}
		return out
	}
	if cmd.first == 0 {
		return out
	}
	// first/last/step without keyPositions' slice: no allocation on the
	// command path.
	last := cmd.last
	if last < 0 {
		last = len(args) + last
	}
	last = min(last, len(args)-1)
	for p := cmd.first; p <= last; p += max(cmd.step, 1) {
		add(p)
	}
	return out
}

// keyPerm is the ACL permission the key at p needs, from its key spec's
// flags, or -1 for an argument that is not a key (a shard channel);
// cached on the command when one spec covers every call.
func (cmd *command) keyPerm(args [][]byte, p int) int {
	if v := cmd.aclPerm.Load(); v != 0 {
		return int(v)
	}
	perm := acl.PermOfKeyFlags(keyArgFlags(cmd, args, p))
	name := cmd.fullName()
	if len(keySpecTable[name]) <= 1 && name != "set" && name != "bitfield" {
		cmd.aclPerm.Store(int32(perm))
	}
	return perm
}

// aclLogContext is the ACL LOG context of a refusal in processCommand.
func (c *Client) aclLogContext() string {
	if c.hasFlag(clientMulti) {
		return acl.CtxMulti
	}
	return acl.CtxToplevel
}

// aclLogDenied records a refused command in the ACL LOG.
func (c *Client) aclLogDenied(res acl.Result, ctx string, pos int, cmd *command, args [][]byte) {
	obj := cmd.fullName()
	if res == acl.DeniedKey || res == acl.DeniedChannel {
		obj = string(args[pos])
	}
	user := "default"
	if c.aclUser != nil {
		user = c.aclUser.Name
	}
	c.srv.aclLogAdd(c, acl.LogEntry{Reason: acl.ReasonName(res), Context: ctx, Object: obj, Username: user})
}

// aclLogAdd adds an entry with the client's CLIENT LIST line.
func (s *Server) aclLogAdd(c *Client, e acl.LogEntry) {
	e.ClientInfo = c.infoString(c)
	s.acl.AddLog(e, s.nowMs(), int(s.cfg.Int(config.DirAcllogMaxLen)))
}

// authenticate is ACLAuthenticateUser: on success the client's user
// becomes name; a failure is logged as an "auth" entry whose object is the
// command as the client spelt it (AUTH or HELLO).
func (c *Client) authenticate(cmdName, name, pass string) bool {
	u, gen := c.srv.acl.Authenticate(name, pass)
	if u == nil {
		ctx := acl.CtxToplevel
		if c.hasFlag(clientMulti) {
			ctx = acl.CtxMulti
		}
		c.srv.aclLogAdd(c, acl.LogEntry{Reason: "auth", Context: ctx, Object: cmdName, Username: name})
		return false
	}
	c.aclDeleted = false
	c.setClientUser(u, gen)
	c.authed.Store(true)
	c.rd.SetUnauthenticated(false)
	return true
}

// aclDisconnect closes the clients authenticated as one of users (deleted
// or replaced by ACL LOAD), as ACLFreeUserAndKillClients: the running
// client is closed after its reply.
func (s *Server) aclDisconnect(self *Client, users map[string]bool) {
	s.forEachClient(func(cl *Client) {
		cl.infoMu.Lock()
		name := cl.user
		cl.infoMu.Unlock()
		if !users[name] || cl.hasFlag(clientMaster) {
			return
		}
		if cl == self {
			self.setFlag(clientCloseAfterReply, true)
			return
		}
		cl.close()
	})
}

// aclKillSubscribers closes the clients of old that subscribe to a
// channel nu no longer allows (Redis's ACLKillPubsubClientsIfNeeded).
func (s *Server) aclKillSubscribers(self *Client, nu, old *acl.User) {
	if !acl.PubsubKillNeeded(nu, old) {
		return
	}
	s.forEachClient(func(cl *Client) {
		cl.infoMu.Lock()
		name := cl.user
		cl.infoMu.Unlock()
		if name != old.Name || !cl.hasFlag(clientPubSub) {
			return
		}
		sub := subscriber{cl}
		chans, pats, shard := s.pubsub.Of(sub, pubsub.Channel), s.pubsub.Of(sub, pubsub.Pattern), s.pubsub.Of(sub, pubsub.Shard)
		if s.acl.Reg.SubscriberAllowed(nu, chans, pats, shard) {
			return
		}
		if cl == self {
			self.setFlag(clientCloseAfterReply, true)
			return
		}
		cl.close()
	})
}

// aclLoadFile is ACL LOAD: the aclfile replaces every user, or nothing
// changes (acl.State.LoadFile). Called without s.acl.Mu.
func (s *Server) aclLoadFile() error {
	return s.acl.LoadFile(s.cfg.Get(config.DirAclfile), s.cfg.Get(config.DirDir))
}

// aclFilePath is where the aclfile is: a relative name is in dir, where
// Redis, having changed into dir, finds it.
func (s *Server) aclFilePath() string {
	return acl.FilePath(s.cfg.Get(config.DirAclfile), s.cfg.Get(config.DirDir))
}

// aclSaveFile is ACL SAVE: every user in the aclfile, written to a
// temporary file and renamed over it.
func (s *Server) aclSaveFile() error {
	step, err := acl.SaveFile(s.aclFilePath(), s.acl.ConfigLines())
	if err != nil {
		s.log.Warn(step, "err", err)
	}
	return err
}

// aclUserLines are CONFIG REWRITE's user lines: none with an aclfile
// (the file holds the users), every user otherwise.
func (s *Server) aclUserLines() []string {
	if s.cfg.Get(config.DirAclfile) != "" {
		return nil
	}
	return s.acl.ConfigLines()
}

// aclRecheck checks a command a script calls (ctx acl.CtxLua, Redis's
// scriptVerifyACL) or EXEC runs (acl.CtxMulti: the rules may have changed
// after it was queued), and logs a refusal.
func (c *Client) aclRecheck(cmd *command, args [][]byte, ctx string) acl.Result {
	if c.aclFree && c.aclGen == c.srv.acl.Gen.Load() {
		return acl.OK
	}
	res, pos := c.aclCheck(cmd, args)
	if res != acl.OK {
		c.aclLogDenied(res, ctx, pos, cmd, args)
	}
	return res
}

// aclRefusal is a script's ACL check of each redis.call: the caller's
// user decides.
func (h *scriptHost) aclRefusal(cmd *command, args [][]byte) string {
	if res := h.c.aclRecheck(cmd, args, acl.CtxLua); res != acl.OK {
		return "The user executing the script " + acl.DeniedMessage(res)
	}
	return ""
}

// ACLCheck answers redis.acl_check_cmd: whether the script's user may run
// args (known false for an unknown command or subcommand).
func (h *scriptHost) ACLCheck(args [][]byte) (allowed, known bool) {
	cmd := h.c.srv.lookupACLCall(args)
	if cmd == nil {
		return false, false
	}
	res, _ := h.c.aclCheck(cmd, args)
	return res == acl.OK, true
}

// lookupACLCall is the command or subcommand a call names for ACL
// DRYRUN and redis.acl_check_cmd, nil for an unknown one.
func (s *Server) lookupACLCall(args [][]byte) *command {
	cmd := s.table.lookup(args[0])
	if cmd != nil && cmd.subs != nil && len(args) >= 2 {
		cmd = cmd.subs[strings.ToLower(string(args[1]))]
	}
	return cmd
}

// aclExecRefusal re-checks a queued command when EXEC runs it (Redis's
// execCommand).
func (c *Client) aclExecRefusal(cmd *command, args [][]byte) string {
	if res := c.aclRecheck(cmd, args, acl.CtxMulti); res != acl.OK {
		return acl.ExecRefusal(res)
	}
	return ""
}

// aclFullKeyRead is Redis's ACLUserCheckCmdWithUnrestrictedKeyAccess for
// read access: whether one selector allows the running command and
// reading every key (SORT's BY and GET patterns read keys no spec names).
func (c *Client) aclFullKeyRead(args [][]byte) bool {
	if c.aclUser == nil || c.aclFree || c.cmd == nil || c.cmd.acl == nil || c.hasFlag(clientMaster) {
		return true
	}
	call := acl.Call{Cmd: c.cmd.acl, Args: args, Keys: appendACLKeys(nil, c.cmd, args)}
	if c.cmd.flags&flagPubSub != 0 {
		call.Channels = acl.AppendChannels(nil, c.cmd.fullName(), len(args))
	}
	return c.srv.acl.Reg.CheckUnrestrictedKeys(c.aclUser, &call, acl.PermRead)
}
