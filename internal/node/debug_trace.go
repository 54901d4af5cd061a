package node

import (
	"strings"

	"github.com/shardis/shardis/internal/node/admin"
)

// DEBUG TRACE START <path> | DEBUG TRACE STOP: writes a Go execution trace
// (admin.StartTrace) of the running server to path, from START until
// STOP. For diagnosing scheduling stalls under a load (replication lag);
// not in Redis. One trace at a time per process.
func debugTrace(c *Client, args [][]byte) {
	sub := ""
	if len(args) >= 3 {
		sub = strings.ToLower(string(args[2]))
	}
	var err error
	switch {
	case sub == "start" && len(args) == 4:
		err = admin.StartTrace(string(args[3]))
	case sub == "stop" && len(args) == 3:
		err = admin.StopTrace()
	default:
		debugSyntaxError(c, args)
		return
	}
	if err != nil {
		c.addError(err.Error())
		return
	}
	c.addOK()
}
