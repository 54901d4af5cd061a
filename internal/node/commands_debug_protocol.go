package node

import (
	"strings"

	"github.com/shardis/shardis/internal/resp"
)

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
func cmdDebugProtocol(c *Client, args [][]byte) {
	switch strings.ToLower(string(args[2])) {
	case "string":
		c.addBulkString("Hello World")
	case "integer":
		c.addInt(12345)
	case "double":
		c.addDouble(3.141)
	case "bignum":
		if c.replying() {
			c.out = resp.AppendBigNumber(c.out, c.proto, "1234567999999999999999999999999999999")
		}
	case "null":
		c.addNull()
	case "array", "set":
		if strings.EqualFold(string(args[2]), "set") {
			c.addSetLen(3)
		} else {
			c.addArrayLen(3)
		}
		for j := int64(0); j < 3; j++ {
			c.addInt(j)
		}
	case "map":
		c.addMapLen(3)
		for j := int64(0); j < 3; j++ {
			c.addInt(j)
			c.addBool(j == 1)
		}
	case "attrib":
		if c.proto >= resp.RESP3 && c.replying() {
			c.out = resp.AppendAttributeLen(c.out, 1)
			c.addBulkString("key-popularity")
			c.addArrayLen(2)
			c.addBulkString("key:123")
			c.addInt(90)
		}
		// An attribute annotates the reply that follows it.
		c.addBulkString("Some real reply following the attribute")
	case "push":
		if c.proto < resp.RESP3 {
			c.addError("ERR RESP2 is not supported by this command")
			return
		}
		if c.replying() {
			c.out = resp.AppendPushLen(c.out, c.proto, 2)
		}
		c.addBulkString("server-cpu-usage")
		c.addInt(42)
		// A push is not the command's reply: the reply follows it.
		c.addBulkString("Some real reply following the push reply")
	case "true":
		c.addBool(true)
	case "false":
		c.addBool(false)
	case "verbatim":
		c.addVerbatim("This is a verbatim\nstring")
	default:
		c.addError("ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false")
	}
}

// DEBUG SET-DISABLE-DENY-SCRIPTS 0|1 (Redis reads the flag with atoi: any
// text that is not a non-zero number is 0).
func cmdDebugDisableDenyScripts(c *Client, args [][]byte) {
	n, _ := parseInt(args[2])
	c.srv.scriptDenyDisabled.Store(n != 0)
	c.addOK()
}
