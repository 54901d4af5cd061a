package node

import (
	"os"
	"runtime/trace"
	"strings"
	"sync"
)

// traceState is the execution trace DEBUG TRACE START writes, if any.
var traceState struct {
	mu   sync.Mutex
	file *os.File
}

// DEBUG TRACE START <path> | DEBUG TRACE STOP: writes a Go execution trace
// (runtime/trace, read with `go tool trace`) of the running server to
// path, from START until STOP. For diagnosing scheduling stalls under a
// load (replication lag); not in Redis. One trace at a time per process.
func debugTrace(c *Client, args [][]byte) {
	if len(args) < 3 {
		debugSyntaxError(c, args)
		return
	}
	traceState.mu.Lock()
	defer traceState.mu.Unlock()
	switch strings.ToLower(string(args[2])) {
	case "start":
		if len(args) != 4 {
			debugSyntaxError(c, args)
			return
		}
		if traceState.file != nil {
			c.addError("ERR a trace is already running")
			return
		}
		f, err := os.OpenFile(string(args[3]), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			c.addError("ERR " + err.Error())
			return
		}
		if err := trace.Start(f); err != nil {
			_ = f.Close()
			c.addError("ERR " + err.Error())
			return
		}
		traceState.file = f
		c.addOK()
	case "stop":
		if len(args) != 3 {
			debugSyntaxError(c, args)
			return
		}
		if traceState.file == nil {
			c.addError("ERR no trace is running")
			return
		}
		trace.Stop()
		err := traceState.file.Close()
		traceState.file = nil
		if err != nil {
			c.addError("ERR " + err.Error())
			return
		}
		c.addOK()
	default:
		debugSyntaxError(c, args)
	}
}
