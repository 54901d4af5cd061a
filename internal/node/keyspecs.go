package node

import (
	"github.com/shardis/shardis/internal/commands"
	"github.com/shardis/shardis/internal/node/cmdinfo"
)

// keySpecTable is Redis 7.0's key specifications, shared with the
// clients in internal/commands.
var keySpecTable = commands.KeySpecs

// keyArgFlags returns the flags Redis reports for the key at position p of
// a call of cmd (package cmdinfo).
func keyArgFlags(cmd *command, args [][]byte, p int) string {
	return cmdinfo.KeyArgFlags(cmd.fullName(), cmd.flags&flagWrite != 0, args, p)
}
