package node

import (
	"sort"
	"strings"
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

func sortedSubs(cmd *command) []*command {
	out := make([]*command, 0, len(cmd.subs))
	for _, s := range cmd.subs {
		out = append(out, s)
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

// flagList is the command's flags as COMMAND INFO reports them, in Redis's
// order.
func (cmd *command) flagList() []string {
	order := []struct {
		f    cmdFlag
		name string
	}{
		{flagWrite, "write"}, {flagReadOnly, "readonly"}, {flagDenyOOM, "denyoom"},
		{flagAdmin, "admin"}, {flagPubSub, "pubsub"}, {flagNoScript, "noscript"},
		{flagBlocking, "blocking"}, {flagLoading, "loading"}, {flagStale, "stale"},
		{flagSkipMonitor, "skip_monitor"}, {flagSkipSlowlog, "skip_slowlog"},
		{flagFast, "fast"}, {flagNoAuth, "no_auth"},
	}
	var out []string
	for _, o := range order {
		if cmd.flags&o.f != 0 {
			out = append(out, o.name)
		}
	}
	if cmd.flags&flagNoMulti != 0 {
		out = append(out, "no_multi")
	}
	if cmd.keys != nil {
		out = append(out, "movablekeys")
	}
	if cmd.flags&flagAllowBusy != 0 {
		out = append(out, "allow_busy")
	}
	return out
}

// aclCategoryOrder is the order Redis lists ACL categories in.
var aclCategoryOrder = []string{"@keyspace", "@read", "@write", "@set", "@sortedset", "@list", "@hash", "@string", "@bitmap", "@hyperloglog", "@geo", "@stream", "@pubsub", "@admin", "@fast", "@slow", "@blocking", "@dangerous", "@connection", "@transaction", "@scripting"}

// groupCategory is the category of a command group, for commands Redis
// 7.0 does not have (its declared ones come from aclCategoryTable).
var groupCategory = map[string]string{
	"generic": "@keyspace", "string": "@string", "list": "@list", "set": "@set",
	"sorted-set": "@sortedset", "hash": "@hash", "bitmap": "@bitmap",
	"hyperloglog": "@hyperloglog", "geo": "@geo", "stream": "@stream",
	"pubsub": "@pubsub", "transactions": "@transaction", "connection": "@connection",
	"scripting": "@scripting",
}

// aclCategories returns the command's ACL categories as COMMAND INFO lists
// them: those it declares plus those its flags imply (Redis's
// setImplicitACLCategories), in Redis's order.
func (cmd *command) aclCategories() []string {
	has := map[string]bool{}
	if decl, ok := aclCategoryTable[cmd.fullName()]; ok {
		for _, cat := range strings.Fields(decl) {
			has[cat] = true
		}
	} else if cat := groupCategory[cmd.cmdGroup()]; cat != "" {
		has[cat] = true
	}
	if cmd.flags&flagWrite != 0 {
		has["@write"] = true
	}
	if cmd.flags&flagReadOnly != 0 && !has["@scripting"] {
		has["@read"] = true
	}
	if cmd.flags&flagAdmin != 0 {
		has["@admin"], has["@dangerous"] = true, true
	}
	if cmd.flags&flagPubSub != 0 {
		has["@pubsub"] = true
	}
	if cmd.flags&flagFast != 0 {
		has["@fast"] = true
	}
	if cmd.flags&flagBlocking != 0 {
		has["@blocking"] = true
	}
	if !has["@fast"] {
		has["@slow"] = true
	}
	var out []string
	for _, cat := range aclCategoryOrder {
		if has[cat] {
			out = append(out, cat)
		}
	}
	return out
}

// legacyRange returns COMMAND INFO's first key, last key and step.
func (cmd *command) legacyRange() (int, int, int) {
	if cmd.first == 0 {
		return 0, 0, 0
	}
	return cmd.first, cmd.last, cmd.step
}

func (c *Client) addStatusSet(items []string) {
	c.addSetLen(len(items))
	for _, it := range items {
		c.addSimple(it)
	}
}

// addCommandInfo writes one COMMAND INFO entry (Redis 7: name, arity,
// flags, first key, last key, step, ACL categories, tips, key specs,
// subcommands).
func (c *Client) addCommandInfo(cmd *command) {
	if cmd == nil {
		c.addNull()
		return
	}
	first, last, step := cmd.legacyRange()
	c.addArrayLen(10)
	c.addBulkString(cmd.fullName())
	c.addInt(int64(cmd.arity))
	c.addStatusSet(cmd.flagList())
	c.addInt(int64(first))
	c.addInt(int64(last))
	c.addInt(int64(step))
	c.addStatusSet(cmd.aclCategories())
	tips := strings.Fields(commandTipsTable[cmd.fullName()])
	c.addSetLen(len(tips))
	for _, tip := range tips {
		c.addBulkString(tip)
	}
	c.addKeySpecs(cmd)
	if cmd.subs == nil {
		c.addSetLen(0)
		return
	}
	subs := sortedSubs(cmd)
	c.addArrayLen(len(subs))
	for _, s := range subs {
		c.addCommandInfo(s)
	}
}

// keyFlags are the access flags of the command's keys, as key specs and
// COMMAND GETKEYSANDFLAGS report them.
func (cmd *command) keyFlags() []string {
	switch {
	case cmd.flags&flagWrite != 0:
		return []string{"RW", "update"}
	default:
		return []string{"RO", "access"}
	}
}

// addDerivedKeySpec writes one key spec derived from cmd's key metadata
// (none for a command without keys).
func (c *Client) addDerivedKeySpec(cmd *command) {
	if !cmd.hasKeys() {
		c.addSetLen(0)
		return
	}
	c.addSetLen(1)
	c.addMapLen(3)
	c.addBulkString("flags")
	c.addStatusSet(cmd.keyFlags())
	c.addBulkString("begin_search")
	if cmd.keys != nil {
		c.addTypedSpec("unknown")
	} else {
		c.addTypedSpec("index", "index", cmd.first)
	}
	c.addBulkString("find_keys")
	if cmd.keys != nil {
		c.addTypedSpec("unknown")
		return
	}
	last := cmd.last
	if last >= 0 {
		last -= cmd.first
	}
	c.addTypedSpec("range", "lastkey", last, "keystep", cmd.step, "limit", 0)
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

// addCommandDocs writes one COMMAND DOCS entry: since, group and, for
// container commands, their subcommands.
func (c *Client) addCommandDocs(cmd *command) {
	n := 1
	if cmd.since != "" {
		n++
	}
	if cmd.subs != nil {
		n++
	}
	c.addMapLen(n)
	if cmd.since != "" {
		c.addBulkString("since")
		c.addBulkString(cmd.since)
	}
	c.addBulkString("group")
	c.addBulkString(cmd.cmdGroup())
	if cmd.subs != nil {
		c.addBulkString("subcommands")
		subs := sortedSubs(cmd)
		c.addMapLen(len(subs))
		for _, s := range subs {
			c.addBulkString(s.fullName())
			c.addCommandDocs(s)
		}
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
		c.addCommandDocs(cmd)
	}
}

// COMMAND LIST [FILTERBY MODULE name|ACLCAT category|PATTERN pattern]
func cmdCommandList(c *Client, args [][]byte) {
	filter := func(*command) bool { return true }
	for i := 2; i < len(args); i++ {
		if !eqFold(args[i], "filterby") || len(args)-1-i != 2 {
			c.addError(errSyntax)
			return
		}
		arg := string(args[i+2])
		switch {
		case eqFold(args[i+1], "module"):
			filter = func(*command) bool { return false }
		case eqFold(args[i+1], "aclcat"):
			cat := "@" + strings.ToLower(arg)
			filter = func(cmd *command) bool {
				for _, x := range cmd.aclCategories() {
					if x == cat {
						return true
					}
				}
				return false
			}
		case eqFold(args[i+1], "pattern"):
			filter = func(cmd *command) bool { return globMatch(arg, cmd.fullName(), true) }
		default:
			c.addError(errSyntax)
			return
		}
		i += 2
	}
	var names []string
	for _, cmd := range c.srv.allCommands() {
		if filter(cmd) {
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
	case !cmd.hasKeys():
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
func cmdCommandHelp(c *Client, args [][]byte) {
	c.addHelp("COMMAND", []string{
		"(no subcommand)",
		"    Return details about all Redis commands.",
		"COUNT",
		"    Return the total number of commands in this Redis server.",
		"LIST",
		"    Return a list of all commands in this Redis server.",
		"INFO [<command-name> ...]",
		"    Return details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"DOCS [<command-name> ...]",
		"    Return documentation details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"GETKEYS <full-command>",
		"    Return the keys from a full Redis command.",
		"GETKEYSANDFLAGS <full-command>",
		"    Return the keys and the access flags from a full Redis command.",
	})
}
