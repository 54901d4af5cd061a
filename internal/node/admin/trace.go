package admin

import (
	"errors"
	"os"
	"runtime/trace"
	"sync"
)

// traceState is the execution trace StartTrace writes, if any: one per
// process.
var traceState struct {
	mu   sync.Mutex
	file *os.File
}

// StartTrace starts a Go execution trace (runtime/trace, read with `go
// tool trace`) of the process into path (DEBUG TRACE START). Its errors'
// texts are the replies.
func StartTrace(path string) error {
	traceState.mu.Lock()
	defer traceState.mu.Unlock()
	if traceState.file != nil {
		return errors.New("ERR a trace is already running")
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return errors.New("ERR " + err.Error())
	}
	if err := trace.Start(f); err != nil {
		_ = f.Close()
		return errors.New("ERR " + err.Error())
	}
	traceState.file = f
	return nil
}

// StopTrace ends the trace StartTrace started and closes its file (DEBUG
// TRACE STOP).
func StopTrace() error {
	traceState.mu.Lock()
	defer traceState.mu.Unlock()
	if traceState.file == nil {
		return errors.New("ERR no trace is running")
	}
	trace.Stop()
	err := traceState.file.Close()
	traceState.file = nil
	if err != nil {
		return errors.New("ERR " + err.Error())
	}
	return nil
}
