// Package cmdinfo renders what the COMMAND family reports about the
// command table, as Redis 7.0 does: COMMAND INFO entries (flags, legacy
// key range, ACL categories, tips, key specifications, subcommands),
// COMMAND DOCS entries, the flags COMMAND GETKEYSANDFLAGS gives a key,
// and COMMAND LIST's filter grammar.
//
// The node describes each command with a Command value; Redis's declared
// metadata (key specs, categories, tips) comes from internal/commands by
// the command's full name. Replies are appended as RESP to a buffer.
package cmdinfo

import (
	"errors"
	"slices"
	"strings"

	"github.com/shardis/shardis/internal/commands"
	"github.com/shardis/shardis/internal/node/glob"
	"github.com/shardis/shardis/internal/resp"
)

// Traits are the command flags COMMAND INFO shows and ACL categories
// derive from.
type Traits struct {
	Write, ReadOnly, DenyOOM, Admin, PubSub, NoScript, Blocking, Loading, Stale bool
	SkipMonitor, SkipSlowlog, Fast, NoAuth, NoMulti, AllowBusy                  bool
	// Movable: the keys are found by the command's code, not a range.
	Movable bool
}

// Flags are the flag names of COMMAND INFO, in Redis's order.
func (t Traits) Flags() []string {
	var out []string
	for _, f := range [...]struct {
		on   bool
		name string
	}{
		{t.Write, "write"}, {t.ReadOnly, "readonly"}, {t.DenyOOM, "denyoom"},
		{t.Admin, "admin"}, {t.PubSub, "pubsub"}, {t.NoScript, "noscript"},
		{t.Blocking, "blocking"}, {t.Loading, "loading"}, {t.Stale, "stale"},
		{t.SkipMonitor, "skip_monitor"}, {t.SkipSlowlog, "skip_slowlog"},
		{t.Fast, "fast"}, {t.NoAuth, "no_auth"}, {t.NoMulti, "no_multi"},
		{t.Movable, "movablekeys"}, {t.AllowBusy, "allow_busy"},
	} {
		if f.on {
			out = append(out, f.name)
		}
	}
	return out
}

// categoryOrder is the order Redis lists ACL categories in.
var categoryOrder = []string{"@keyspace", "@read", "@write", "@set", "@sortedset", "@list", "@hash", "@string", "@bitmap", "@hyperloglog", "@geo", "@stream", "@pubsub", "@admin", "@fast", "@slow", "@blocking", "@dangerous", "@connection", "@transaction", "@scripting"}

// groupCategory is the category of a command group, for commands Redis
// 7.0 does not have (its declared ones come from commands.ACLCategories).
var groupCategory = map[string]string{
	"generic": "@keyspace", "string": "@string", "list": "@list", "set": "@set",
	"sorted-set": "@sortedset", "hash": "@hash", "bitmap": "@bitmap",
	"hyperloglog": "@hyperloglog", "geo": "@geo", "stream": "@stream",
	"pubsub": "@pubsub", "transactions": "@transaction", "connection": "@connection",
	"scripting": "@scripting",
}

// Categories returns a command's ACL categories as COMMAND INFO lists
// them: those Redis declares for name (else its group's), plus those its
// flags imply (Redis's setImplicitACLCategories), in Redis's order.
func Categories(name, group string, t Traits) []string {
	has := map[string]bool{}
	if decl, ok := commands.ACLCategories[name]; ok {
		for _, cat := range strings.Fields(decl) {
			has[cat] = true
		}
	} else if cat := groupCategory[group]; cat != "" {
		has[cat] = true
	}
	has["@write"] = has["@write"] || t.Write
	has["@read"] = has["@read"] || (t.ReadOnly && !has["@scripting"])
	has["@admin"] = has["@admin"] || t.Admin
	has["@dangerous"] = has["@dangerous"] || t.Admin
	has["@pubsub"] = has["@pubsub"] || t.PubSub
	has["@fast"] = has["@fast"] || t.Fast
	has["@blocking"] = has["@blocking"] || t.Blocking
	has["@slow"] = has["@slow"] || !has["@fast"]
	var out []string
	for _, cat := range categoryOrder {
		if has[cat] {
			out = append(out, cat)
		}
	}
	return out
}

// Command describes one command or subcommand.
type Command struct {
	Name   string // full name: "get", "config|get"
	Arity  int
	Traits Traits
	// First, Last and Step are the legacy key range (First 0: no key
	// range); keys found by code set Traits.Movable instead.
	First, Last, Step int
	Group, Since      string
	// Container is set on commands with subcommands; Subs are those,
	// sorted by name.
	Container bool
	Subs      []*Command
}

// hasKeys reports whether the command takes key arguments.
func (c *Command) hasKeys() bool { return c.Traits.Movable || c.First > 0 }

// keyFlags are the access flags of a command's keys without a declared
// key spec.
func (c *Command) keyFlags() []string {
	if c.Traits.Write {
		return []string{"RW", "update"}
	}
	return []string{"RO", "access"}
}

func appendStatusSet(b []byte, proto int, items []string) []byte {
	b = resp.AppendSetLen(b, proto, len(items))
	for _, it := range items {
		b = resp.AppendSimple(b, it)
	}
	return b
}

// AppendInfo appends one COMMAND INFO entry (Redis 7: name, arity,
// flags, first key, last key, step, ACL categories, tips, key specs,
// subcommands); a nil command is a null.
func AppendInfo(b []byte, proto int, c *Command) []byte {
	if c == nil {
		return resp.AppendNull(b, proto)
	}
	first, last, step := c.First, c.Last, c.Step
	if first == 0 {
		last, step = 0, 0
	}
	b = resp.AppendArrayLen(b, 10)
	b = resp.AppendBulkString(b, c.Name)
	b = resp.AppendInt(b, int64(c.Arity))
	b = appendStatusSet(b, proto, c.Traits.Flags())
	b = resp.AppendInt(b, int64(first))
	b = resp.AppendInt(b, int64(last))
	b = resp.AppendInt(b, int64(step))
	b = appendStatusSet(b, proto, Categories(c.Name, c.Group, c.Traits))
	tips := strings.Fields(commands.Tips[c.Name])
	b = resp.AppendSetLen(b, proto, len(tips))
	for _, tip := range tips {
		b = resp.AppendBulkString(b, tip)
	}
	b = appendKeySpecs(b, proto, c)
	if !c.Container {
		return resp.AppendSetLen(b, proto, 0)
	}
	b = resp.AppendArrayLen(b, len(c.Subs))
	for _, s := range c.Subs {
		b = AppendInfo(b, proto, s)
	}
	return b
}

// AppendDocs appends one COMMAND DOCS entry: since, group and, for
// container commands, their subcommands.
func AppendDocs(b []byte, proto int, c *Command) []byte {
	n := 1
	if c.Since != "" {
		n++
	}
	if c.Container {
		n++
	}
	b = resp.AppendMapLen(b, proto, n)
	if c.Since != "" {
		b = resp.AppendBulkString(b, "since")
		b = resp.AppendBulkString(b, c.Since)
	}
	b = resp.AppendBulkString(b, "group")
	b = resp.AppendBulkString(b, c.Group)
	if c.Container {
		b = resp.AppendBulkString(b, "subcommands")
		b = resp.AppendMapLen(b, proto, len(c.Subs))
		for _, s := range c.Subs {
			b = resp.AppendBulkString(b, s.Name)
			b = AppendDocs(b, proto, s)
		}
	}
	return b
}

// ListFilter is COMMAND LIST's FILTERBY; the zero value lets every
// command through.
type ListFilter struct {
	kind int // 0 none, 1 module, 2 aclcat, 3 pattern
	arg  string
}

// ErrSyntax is Redis's syntax error.
var ErrSyntax = errors.New("ERR syntax error")

// ParseList parses the arguments after COMMAND LIST:
// [FILTERBY MODULE name|ACLCAT category|PATTERN pattern].
func ParseList(args [][]byte) (ListFilter, error) {
	var f ListFilter
	for i := 0; i < len(args); i += 3 {
		if !strings.EqualFold(string(args[i]), "filterby") || len(args)-i != 3 {
			return f, ErrSyntax
		}
		switch f.arg = string(args[i+2]); strings.ToLower(string(args[i+1])) {
		case "module":
			f.kind = 1
		case "aclcat":
			f.kind, f.arg = 2, "@"+strings.ToLower(f.arg)
		case "pattern":
			f.kind = 3
		default:
			return f, ErrSyntax
		}
	}
	return f, nil
}

// Match reports whether the filter lets c through.
func (f ListFilter) Match(c *Command) bool {
	switch f.kind {
	case 1:
		return false // no modules
	case 2:
		return slices.Contains(Categories(c.Name, c.Group, c.Traits), f.arg)
	case 3:
		return glob.Match(f.arg, c.Name, true)
	}
	return true
}

// Help is COMMAND HELP's text.
var Help = []string{
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
}
