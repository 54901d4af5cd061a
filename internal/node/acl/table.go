// Package acl is Redis 7.0's access control lists as a pure package: users
// and their selectors, the rule language of ACL SETUSER and the user
// directive, the permission check of a command with its keys and channels,
// the ACL LOG, and the descriptions ACL LIST and ACL GETUSER print. It does
// no I/O and reads no clock: the caller passes the time and the random
// bytes, and tells it the command table through Table.
package acl

import (
	"sort"
	"strings"
)

// Categories are Redis's ACL command categories, in the order ACL CAT
// lists them and COMMAND INFO reports them. A Category bit i stands for
// Categories[i].
var Categories = []string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
	"bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
	"blocking", "dangerous", "connection", "transaction", "scripting",
}

// Category is a set of categories, one bit per entry of Categories.
type Category uint32

// CategoryByName returns the category bit of a name (without the @), or
// 0 when there is no such category.
func CategoryByName(name string) Category {
	for i, n := range Categories {
		if strings.EqualFold(n, name) {
			return 1 << i
		}
	}
	return 0
}

// Command is one command or subcommand of the server's table as ACL sees
// it. The table assigns ID.
type Command struct {
	// FullName is "get", or "config|get" for a subcommand.
	FullName string
	// Categories are the command's ACL categories.
	Categories Category
	// NoAuth commands (AUTH, HELLO ...) run whatever the user's rules.
	NoAuth bool
	// Parent is the container of a subcommand; Subs the subcommands of a
	// container, sorted by name.
	Parent *Command
	Subs   []*Command
	// ID indexes the selectors' command bitmaps.
	ID int
}

// Table is the command table the rules refer to.
type Table struct {
	top    []*Command // containers and plain commands, by name
	byName map[string]*Command
	n      int
}

// NewTable indexes top-level commands (each with its Subs) and assigns
// their IDs. Names are matched case-insensitively.
func NewTable(cmds []*Command) *Table {
	t := &Table{byName: make(map[string]*Command)}
	t.top = append(t.top, cmds...)
	sort.Slice(t.top, func(i, j int) bool { return t.top[i].FullName < t.top[j].FullName })
	for _, c := range t.top {
		c.ID = t.n
		t.n++
		t.byName[strings.ToLower(c.FullName)] = c
		sort.Slice(c.Subs, func(i, j int) bool { return c.Subs[i].FullName < c.Subs[j].FullName })
		for _, s := range c.Subs {
			s.Parent = c
			s.ID = t.n
			t.n++
			t.byName[strings.ToLower(s.FullName)] = s
		}
	}
	return t
}

// Lookup returns the command of a full name ("get", "config|get").
func (t *Table) Lookup(name string) *Command { return t.byName[strings.ToLower(name)] }

// each calls f for every command and subcommand: a container first, then
// its subcommands.
func (t *Table) each(f func(c *Command)) {
	for _, c := range t.top {
		f(c)
		for _, s := range c.Subs {
			f(s)
		}
	}
}

// InCategory lists the full names of the commands in cat, in the table's
// order (ACL CAT <category>).
func (t *Table) InCategory(cat Category) []string {
	var out []string
	t.each(func(c *Command) {
		if c.Categories&cat != 0 {
			out = append(out, c.FullName)
		}
	})
	return out
}

// words is the number of uint64 words of a command bitmap for t.
func (t *Table) words() int { return (t.n + 63) / 64 }
