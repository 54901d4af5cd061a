package node

import (
	"encoding/binary"

	"github.com/shardis/shardis/internal/rdb"
)

// FUNCTION DUMP and FUNCTION RESTORE for a node without scripting: the
// function library is always empty, so DUMP serialises no library and
// RESTORE accepts a payload that holds none. redis-cli --cluster add-node
// copies the cluster's functions to a new node with these two commands
// (and FUNCTION LIST, in commands_server.go).
func registerFunctionStubCommands(t *commandTable) {
	t.addSub("function", &command{name: "dump", arity: 2, flags: flagNoScript, fn: cmdFunctionDump, since: "7.0.0"})
	t.addSub("function", &command{name: "restore", arity: -3, flags: flagWrite | flagDenyOOM | flagNoScript, fn: cmdFunctionRestore, since: "7.0.0"})
}

// emptyFunctionsPayload is FUNCTION DUMP's payload for an empty library:
// no function records, then the RDB version and the CRC64 of what
// precedes it, both little-endian, as Redis's functionDumpCommand.
func emptyFunctionsPayload() []byte {
	p := binary.LittleEndian.AppendUint16(nil, rdb.Version)
	return binary.LittleEndian.AppendUint64(p, rdb.Checksum(p))
}

// FUNCTION DUMP
func cmdFunctionDump(c *Client, args [][]byte) { c.addBulk(emptyFunctionsPayload()) }

// FUNCTION RESTORE serialized-value [FLUSH|APPEND|REPLACE]
func cmdFunctionRestore(c *Client, args [][]byte) {
	if len(args) > 4 {
		c.addError("ERR unknown subcommand or wrong number of arguments for '" + truncArg(args[1]) + "'. Try FUNCTION HELP.")
		return
	}
	if len(args) == 4 && !eqFold(args[3], "append") && !eqFold(args[3], "replace") && !eqFold(args[3], "flush") {
		c.addError("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
		return
	}
	p := args[2]
	if len(p) < 10 || binary.LittleEndian.Uint16(p[len(p)-10:]) > rdb.Version ||
		rdb.Checksum(p[:len(p)-8]) != binary.LittleEndian.Uint64(p[len(p)-8:]) {
		c.addError("ERR DUMP payload version or checksum are wrong")
		return
	}
	if len(p) > 10 {
		// A library: this node has no scripting engine to load it into.
		c.addError("ERR Engine 'LUA' not found")
		return
	}
	c.addOK()
}
