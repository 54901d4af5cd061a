package acl

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/shardis/shardis/internal/node/value"
	"github.com/shardis/shardis/internal/resp"
)

// The grammars, replies and file text of the ACL command that do not need
// the server: the node's handlers take the registry's lock, call these and
// write what they return. An error reply is returned as its text
// ("ERR ..."), "" meaning none.

// Errors of the ACL command, with Redis's texts.
const (
	// ErrNoACLFile answers ACL LOAD and ACL SAVE without an aclfile.
	ErrNoACLFile = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."
	// ErrDeleteDefault answers ACL DELUSER default.
	ErrDeleteDefault = "ERR The 'default' user cannot be removed"
	// ErrSave answers an ACL SAVE that could not write the file.
	ErrSave = "ERR There was an error trying to save the ACLs. Please check the server logs for more information"

	errNotInt = "ERR value is not an integer or out of range"
)

// AppendUser appends ACL GETUSER's reply for u, whose selectors (the
// root one first) are sels.
func AppendUser(b []byte, proto int, u *User, sels []SelectorInfo) []byte {
	b = resp.AppendMapLen(b, proto, 6)
	b = resp.AppendBulkString(b, "flags")
	flags := u.Flags()
	b = resp.AppendSetLen(b, proto, len(flags))
	for _, f := range flags {
		b = resp.AppendBulkString(b, f)
	}
	b = resp.AppendBulkString(b, "passwords")
	pw := u.Passwords()
	b = resp.AppendArrayLen(b, len(pw))
	for _, p := range pw {
		b = resp.AppendBulkString(b, p)
	}
	b = appendSelector(b, sels[0])
	b = resp.AppendBulkString(b, "selectors")
	b = resp.AppendArrayLen(b, len(sels)-1)
	for _, si := range sels[1:] {
		b = resp.AppendMapLen(b, proto, 3)
		b = appendSelector(b, si)
	}
	return b
}

func appendSelector(b []byte, si SelectorInfo) []byte {
	b = resp.AppendBulkString(b, "commands")
	b = resp.AppendBulkString(b, si.Commands)
	b = resp.AppendBulkString(b, "keys")
	b = resp.AppendBulkString(b, si.Keys)
	b = resp.AppendBulkString(b, "channels")
	return resp.AppendBulkString(b, si.Channels)
}

// ParseCategory is ACL CAT's category argument.
func ParseCategory(name string) (Category, string) {
	cat := CategoryByName(name)
	if cat == 0 {
		if len(name) > 128 {
			name = name[:128]
		}
		return 0, "ERR Unknown category '" + name + "'"
	}
	return cat, ""
}

// ParseGenPassBits parses ACL GENPASS's [bits] (args[2], 256 without).
func ParseGenPassBits(args [][]byte) (int, string) {
	bits := int64(256)
	if len(args) == 3 {
		n, ok := value.ParseInt(args[2])
		if !ok {
			return 0, errNotInt
		}
		bits = n
	}
	if bits <= 0 || bits > 4096 {
		return 0, "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"
	}
	return int(bits), ""
}

// ParseLog parses ACL LOG's [count | RESET] (args[2]; 10 entries
// without).
func ParseLog(args [][]byte) (count int, reset bool, msg string) {
	if len(args) < 3 {
		return 10, false, ""
	}
	if strings.EqualFold(string(args[2]), "reset") {
		return 0, true, ""
	}
	n, ok := value.ParseInt(args[2])
	if !ok {
		return 0, false, errNotInt
	}
	return int(min(max(n, 0), 1<<31)), false, ""
}

// AppendLog appends ACL LOG's reply for entries at now (ms).
func AppendLog(b []byte, proto int, entries []LogEntry, now int64) []byte {
	b = resp.AppendArrayLen(b, len(entries))
	for _, e := range entries {
		b = resp.AppendMapLen(b, proto, 7)
		b = resp.AppendBulkString(b, "count")
		b = resp.AppendInt(b, e.Count)
		b = resp.AppendBulkString(b, "reason")
		b = resp.AppendBulkString(b, e.Reason)
		b = resp.AppendBulkString(b, "context")
		b = resp.AppendBulkString(b, e.Context)
		b = resp.AppendBulkString(b, "object")
		b = resp.AppendBulkString(b, e.Object)
		b = resp.AppendBulkString(b, "username")
		b = resp.AppendBulkString(b, e.Username)
		b = resp.AppendBulkString(b, "age-seconds")
		b = resp.AppendDouble(b, proto, float64(now-e.CTime)/1000)
		b = resp.AppendBulkString(b, "client-info")
		b = resp.AppendBulkString(b, e.ClientInfo)
	}
	return b
}

// DryRunText is ACL DRYRUN's status reply for res: "" for OK, otherwise
// the refusal naming the command (fullName) or the refused key or
// channel (arg).
func DryRunText(res Result, fullName, arg string) string {
	switch res {
	case OK:
		return ""
	case DeniedCmd:
		return "This user has no permissions to run the '" + fullName + "' command"
	case DeniedKey:
		return "This user has no permissions to access the '" + arg + "' key"
	}
	return "This user has no permissions to access the '" + arg + "' channel"
}

// ExecRefusal is the NOPERM error of a queued command EXEC refuses
// because the rules changed after it was queued (Redis's execCommand).
func ExecRefusal(res Result) string {
	reason := "no permission"
	switch res {
	case DeniedCmd:
		reason = "no permission to execute the command or subcommand"
	case DeniedKey:
		reason = "no permission to touch the specified keys"
	case DeniedChannel:
		reason = "no permission to access one of the channels used as arguments"
	}
	return "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: " + reason
}

// PermOfKeyFlags is the permission a key needs from its key spec's flags
// ("RW access delete" ...): access reads; insert, delete and update
// write; -1 for a not_key argument (a shard channel).
func PermOfKeyFlags(flags string) int {
	perm := 0
	for flags != "" {
		var f string
		f, flags, _ = strings.Cut(flags, " ")
		switch f {
		case "not_key":
			return -1
		case "access":
			perm |= PermRead
		case "insert", "delete", "update":
			perm |= PermWrite
		}
	}
	return perm
}

// AppendChannels appends the channels a call of command fullName with
// nargs arguments publishes or subscribes to (Redis's
// getChannelsFromCommand; unsubscribing is never refused).
func AppendChannels(out []ChannelRef, fullName string, nargs int) []ChannelRef {
	switch fullName {
	case "publish", "spublish":
		out = append(out, ChannelRef{Pos: 1})
	case "subscribe", "ssubscribe":
		for i := 1; i < nargs; i++ {
			out = append(out, ChannelRef{Pos: i})
		}
	case "psubscribe":
		for i := 1; i < nargs; i++ {
			out = append(out, ChannelRef{Pos: i, Pattern: true})
		}
	}
	return out
}

// FileLines splits an aclfile's contents into the lines ParseLines reads.
func FileLines(data []byte) []string { return strings.Split(string(data), "\n") }

// FileText is the aclfile ACL SAVE writes for lines (ConfigLines).
func FileText(lines []string) []byte { return []byte(strings.Join(lines, "\n") + "\n") }

// OpenError is ACL LOAD's error for an aclfile named file that could not
// be read, with Redis's text.
func OpenError(file string, err error) error {
	return fmt.Errorf("Error loading ACLs, opening file '%s': %s", file, strings.TrimPrefix(errnoText(err), "open "+file+": "))
}

// errnoText is the strerror part of a file error, capitalised as
// strerror's.
func errnoText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		s := pe.Err.Error()
		if s != "" {
			return strings.ToUpper(s[:1]) + s[1:]
		}
	}
	return err.Error()
}

// Help is ACL HELP's text.
var Help = []string{
	"CAT [<category>]",
	"    List all commands that belong to <category>, or all command categories",
	"    when no category is specified.",
	"DELUSER <username> [<username> ...]",
	"    Delete a list of users.",
	"DRYRUN <username> <command> [<arg> ...]",
	"    Returns whether the user can execute the given command without executing the command.",
	"GETUSER <username>",
	"    Get the user's details.",
	"GENPASS [<bits>]",
	"    Generate a secure 256-bit user password. The optional `bits` argument can",
	"    be used to specify a different size.",
	"LIST",
	"    Show users details in config file format.",
	"LOAD",
	"    Reload users from the ACL file.",
	"LOG [<count> | RESET]",
	"    Show the ACL log entries.",
	"SAVE",
	"    Save the current config to the ACL file.",
	"SETUSER <username> <attribute> [<attribute> ...]",
	"    Create or modify a user with the specified attributes.",
	"USERS",
	"    List all the registered usernames.",
	"WHOAMI",
	"    Return the current connection username.",
}
