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
	replyOKOrError(c, err)
}

// DEBUG PROFILE CPU START <path> | DEBUG PROFILE CPU STOP | DEBUG PROFILE
// <allocs|heap|goroutine|mutex|block> <path>: a Go CPU profile of the
// running server from START to STOP, or a snapshot of one of the
// runtime's other profiles (admin.StartCPUProfile, admin.WriteProfile),
// for `go tool pprof`. For finding where a load's CPU and garbage go; not
// in Redis. Like every DEBUG subcommand it needs enable-debug-command.
func debugProfile(c *Client, args [][]byte) {
	var err error
	switch {
	case len(args) == 5 && strings.EqualFold(string(args[2]), "cpu") && strings.EqualFold(string(args[3]), "start"):
		err = admin.StartCPUProfile(string(args[4]))
	case len(args) == 4 && strings.EqualFold(string(args[2]), "cpu") && strings.EqualFold(string(args[3]), "stop"):
		err = admin.StopCPUProfile()
	case len(args) == 4 && !strings.EqualFold(string(args[2]), "cpu"):
		err = admin.WriteProfile(strings.ToLower(string(args[2])), string(args[3]))
	default:
		debugSyntaxError(c, args)
		return
	}
	replyOKOrError(c, err)
}

// replyOKOrError replies +OK, or err's text (a Redis error).
func replyOKOrError(c *Client, err error) {
	if err != nil {
		c.addError(err.Error())
		return
	}
	c.addOK()
}
