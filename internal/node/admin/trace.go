package admin

import (
	"errors"
	"os"
	"runtime/trace"
	"sync"
)

// fileRun is a diagnostic the process writes into one file from a start
// to a stop (an execution trace, a CPU profile): at most one of each kind
// at a time. Its errors' texts are the replies.
type fileRun struct {
	mu   sync.Mutex
	file *os.File
	// what names it in the errors ("trace", "CPU profile").
	what string
}

// start creates path and begins writing into it with begin.
func (fr *fileRun) start(path string, begin func(*os.File) error) error {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	if fr.file != nil {
		return errors.New("ERR a " + fr.what + " is already running")
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return errors.New("ERR " + err.Error())
	}
	if err := begin(f); err != nil {
		_ = f.Close()
		return errors.New("ERR " + err.Error())
	}
	fr.file = f
	return nil
}

// stop ends the run with end and closes its file.
func (fr *fileRun) stop(end func()) error {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	if fr.file == nil {
		return errors.New("ERR no " + fr.what + " is running")
	}
	end()
	err := fr.file.Close()
	fr.file = nil
	if err != nil {
		return errors.New("ERR " + err.Error())
	}
	return nil
}

// traceRun is the execution trace StartTrace writes, if any.
var traceRun = fileRun{what: "trace"}

// StartTrace starts a Go execution trace (runtime/trace, read with `go
// tool trace`) of the process into path (DEBUG TRACE START). Its errors'
// texts are the replies.
func StartTrace(path string) error {
	return traceRun.start(path, func(f *os.File) error { return trace.Start(f) })
}

// StopTrace ends the trace StartTrace started and closes its file (DEBUG
// TRACE STOP).
func StopTrace() error { return traceRun.stop(trace.Stop) }
