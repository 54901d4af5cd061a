package node

import "github.com/shardis/shardis/internal/node/admin"

// DEBUG PROTOCOL and DEBUG SET-DISABLE-DENY-SCRIPTS, as Redis 7.0's
// debug.c: the first answers with one sample of each reply type of the
// client's protocol (Redis's tests use it to check RESP2/RESP3 replies
// and their conversion inside scripts); the second lets scripts call
// commands flagged noscript (tests that drive CLIENT LIST or DEBUG from a
// script). Both are DEBUG, so enable-debug-command governs them.

func init() {
	debugSubcommands["protocol"] = debugSubcommand{args: 3, fn: cmdDebugProtocol}
	debugSubcommands["set-disable-deny-scripts"] = debugSubcommand{args: 3, fn: cmdDebugDisableDenyScripts}
}

// debugSubcommand is a DEBUG subcommand with a fixed argument count
// (including DEBUG and the subcommand's name).
type debugSubcommand struct {
	args int
	fn   handlerFunc
}

// debugSubcommands are the DEBUG subcommands kept out of cmdDebug's
// switch, one file per family.
var debugSubcommands = map[string]debugSubcommand{}

// DEBUG PROTOCOL string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false
// (admin.AppendDebugProtocol).
func cmdDebugProtocol(c *Client, args [][]byte) {
	out, msg := admin.AppendDebugProtocol(nil, c.proto, string(args[2]))
	if msg != "" {
		c.addError(msg)
		return
	}
	c.addAppended(func(b []byte, _ int) []byte { return append(b, out...) })
}

// DEBUG SET-DISABLE-DENY-SCRIPTS 0|1 (Redis reads the flag with atoi: any
// text that is not a non-zero number is 0).
func cmdDebugDisableDenyScripts(c *Client, args [][]byte) {
	n, _ := parseInt(args[2])
	c.srv.scriptDenyDisabled.Store(n != 0)
	c.addOK()
}
