package node

import (
	"sort"
	"strings"

	"github.com/shardis/shardis/internal/commands"

	"github.com/shardis/shardis/internal/node/cmdinfo"
)

func registerCommandCommands(t *commandTable) {
	f := flagLoading | flagStale
	t.add(&command{name: "command", arity: -1, flags: f, fn: cmdCommand, group: "server", since: "2.8.13"})
	t.addSub("command", &command{name: "count", arity: 2, flags: f, fn: cmdCommandCount, since: "2.8.13"})
	t.addSub("command", &command{name: "info", arity: -2, flags: f, fn: cmdCommandInfo, since: "2.8.13"})
	t.addSub("command", &command{name: "docs", arity: -2, flags: f, fn: cmdCommandDocs, since: "7.0.0"})
	t.addSub("command", &command{name: "list", arity: -2, flags: f, fn: cmdCommandList, since: "7.0.0"})
	t.addSub("command", &command{name: "getkeys", arity: -4, flags: f, fn: cmdCommandGetKeys, since: "2.8.13"})
	t.addSub("command", &command{name: "getkeysandflags", arity: -4, flags: f, fn: cmdCommandGetKeysAndFlags, since: "7.0.0"})
	t.addSub("command", &command{name: "help", arity: 2, flags: f, fn: cmdCommandHelp, since: "5.0.0"})
}

// COMMAND: every command's COMMAND INFO; with an unknown subcommand, the
// container's error.
func cmdCommand(c *Client, args [][]byte) {
	if len(args) > 1 {
		cmdHelpDispatch(c, args)
		return
	}
	cmds := c.srv.topCommands()
	c.addArrayLen(len(cmds))
	for _, cmd := range cmds {
		c.addCommandInfo(cmd)
	}
}

// topCommands returns the top-level commands sorted by name.
func (s *Server) topCommands() []*command {
	out := make([]*command, 0, len(s.table.cmds))
	for _, cmd := range s.table.cmds {
		out = append(out, cmd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// lookupCommandByFullName finds "get" or "config|get".
func (s *Server) lookupCommandByFullName(name string) *command {
	name = strings.ToLower(name)
	parent, sub, hasSub := strings.Cut(name, "|")
	cmd := s.table.cmds[parent]
	if cmd == nil || !hasSub {
		return cmd
	}
	return cmd.subs[sub]
}

// lookupCommandArgs finds the command (or subcommand) that args would run.
func (s *Server) lookupCommandArgs(args [][]byte) *command {
	cmd := s.table.lookup(args[0])
	if cmd == nil || cmd.subs == nil {
		return cmd
	}
	if len(args) < 2 {
		return cmd
	}
	return cmd.subs[strings.ToLower(string(args[1]))]
}

// cmdGroup is a command's group; subcommands inherit their parent's.
func (cmd *command) cmdGroup() string {
	if cmd.group != "" {
		return cmd.group
	}
	if cmd.parent != nil && cmd.parent.group != "" {
		return cmd.parent.group
	}
	return "server"
}

// hasKeys reports whether the command takes key arguments.
func (cmd *command) hasKeys() bool { return cmd.keys != nil || cmd.first > 0 }

// aclCategories returns the command's ACL categories as COMMAND INFO lists
// them (package cmdinfo).
func (cmd *command) aclCategories() []string {
	return cmdinfo.Categories(cmd.fullName(), cmd.cmdGroup(), cmd.traits())
}

// traits are the command's flags as package cmdinfo names them.
func (cmd *command) traits() cmdinfo.Traits {
	has := func(f cmdFlag) bool { return cmd.flags&f != 0 }
	return cmdinfo.Traits{Write: has(flagWrite), ReadOnly: has(flagReadOnly), DenyOOM: has(flagDenyOOM),
		Admin: has(flagAdmin), PubSub: has(flagPubSub), NoScript: has(flagNoScript), Blocking: has(flagBlocking),
		Loading: has(flagLoading), Stale: has(flagStale), SkipMonitor: has(flagSkipMonitor),
		SkipSlowlog: has(flagSkipSlowlog), Fast: has(flagFast), NoAuth: has(flagNoAuth), NoMulti: has(flagNoMulti),
		AllowBusy: has(flagAllowBusy), Movable: cmd.keys != nil}
}

// describe is cmd (and its subcommands, sorted) as package cmdinfo
// renders it; nil stays nil.
func describe(cmd *command) *cmdinfo.Command {
	if cmd == nil {
		return nil
	}
	d := &cmdinfo.Command{Name: cmd.fullName(), Arity: cmd.arity, Traits: cmd.traits(), First: cmd.first,
		Last: cmd.last, Step: cmd.step, Group: cmd.cmdGroup(), Since: cmd.since, Container: cmd.subs != nil}
	for _, s := range cmd.subs {
		d.Subs = append(d.Subs, describe(s))
	}
	sort.Slice(d.Subs, func(i, j int) bool { return d.Subs[i].Name < d.Subs[j].Name })
	return d
}

// addAppended appends what fn renders (a package's RESP) to the reply.
func (c *Client) addAppended(fn func(b []byte, proto int) []byte) {
	if c.replying() {
		c.out = fn(c.out, c.proto)
	}
}

// addCommandInfo writes one COMMAND INFO entry (null for nil).
func (c *Client) addCommandInfo(cmd *command) {
	d := describe(cmd)
	c.addAppended(func(b []byte, proto int) []byte { return cmdinfo.AppendInfo(b, proto, d) })
}

func (c *Client) addStatusSet(items []string) {
	c.addSetLen(len(items))
	for _, it := range items {
		c.addSimple(it)
	}
}

// COMMAND COUNT
func cmdCommandCount(c *Client, args [][]byte) { c.addInt(int64(len(c.srv.table.cmds))) }

// COMMAND INFO [command-name ...]
func cmdCommandInfo(c *Client, args [][]byte) {
	if len(args) == 2 {
		cmdCommand(c, args[:1])
		return
	}
	c.addArrayLen(len(args) - 2)
	for _, a := range args[2:] {
		c.addCommandInfo(c.srv.lookupCommandByFullName(string(a)))
	}
}

// COMMAND DOCS [command-name ...]
func cmdCommandDocs(c *Client, args [][]byte) {
	var cmds []*command
	if len(args) == 2 {
		cmds = c.srv.topCommands()
	} else {
		for _, a := range args[2:] {
			if cmd := c.srv.lookupCommandByFullName(string(a)); cmd != nil {
				cmds = append(cmds, cmd)
			}
		}
	}
	c.addMapLen(len(cmds))
	for _, cmd := range cmds {
		c.addBulkString(cmd.fullName())
		d := describe(cmd)
		c.addAppended(func(b []byte, proto int) []byte { return cmdinfo.AppendDocs(b, proto, d) })
	}
}

// COMMAND LIST [FILTERBY MODULE name|ACLCAT category|PATTERN pattern]
func cmdCommandList(c *Client, args [][]byte) {
	f, err := cmdinfo.ParseList(args[2:])
	if err != nil {
		c.addError(err.Error())
		return
	}
	var names []string
	for _, cmd := range c.srv.allCommands() {
		if f.Match(describe(cmd)) {
			names = append(names, cmd.fullName())
		}
	}
	c.addStrings(names)
}

// getKeys implements COMMAND GETKEYS and GETKEYSANDFLAGS from the key
// metadata of the command table.
func getKeys(c *Client, args [][]byte, withFlags bool) {
	sub := args[2:]
	cmd := c.srv.lookupCommandArgs(sub)
	switch {
	case cmd == nil:
		c.addError("ERR Invalid command specified")
		return
	case !cmd.hasKeys() || notKeyOnly(sub):
		c.addError("ERR The command has no key arguments")
		return
	case !arityOK(cmd, len(sub)):
		c.addError("ERR Invalid number of arguments specified for command")
		return
	}
	var pos []int
	for _, p := range cmd.keyPositions(sub) {
		if p > 0 && p < len(sub) {
			pos = append(pos, p)
		}
	}
	if len(pos) == 0 && cmd.flags&flagLockScript != 0 && cmd.keys != nil {
		c.addArrayLen(0) // EVAL, FCALL: Redis's no_mandatory_keys
		return
	}
	if len(pos) == 0 {
		c.addError("ERR Invalid arguments specified for command")
		return
	}
	c.addArrayLen(len(pos))
	for _, p := range pos {
		if withFlags {
			c.addArrayLen(2)
			c.addBulk(sub[p])
			c.addStatusSet(strings.Fields(keyArgFlags(cmd, sub, p)))
		} else {
			c.addBulk(sub[p])
		}
	}
}

// COMMAND GETKEYS command [arg ...]
func cmdCommandGetKeys(c *Client, args [][]byte) { getKeys(c, args, false) }

// COMMAND GETKEYSANDFLAGS command [arg ...]
func cmdCommandGetKeysAndFlags(c *Client, args [][]byte) { getKeys(c, args, true) }

// COMMAND HELP
func cmdCommandHelp(c *Client, args [][]byte) { c.addHelp("COMMAND", cmdinfo.Help) }

// notKeyOnly reports whether every key spec Redis 7.0 gives the call's
// command is flagged not_key (SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH): Redis
// then says the command has no key arguments (doesCommandHaveKeys),
// while the node still takes their channels as key positions to route
// and check their slots.
func notKeyOnly(args [][]byte) bool {
	_, specs, known := commands.Lookup(args)
	if !known || len(specs) == 0 {
		return false
	}
	for i := range specs {
		if !specs[i].NotKey() {
			return false
		}
	}
	return true
}
