package admin

import (
	"errors"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
)

// cpuProfile is the CPU profile StartCPUProfile writes, if any: one per
// process.
var cpuProfile struct {
	mu   sync.Mutex
	file *os.File
}

// StartCPUProfile starts a CPU profile (runtime/pprof, read with `go tool
// pprof`) of the process into path (DEBUG PROFILE CPU START). Its errors'
// texts are the replies.
func StartCPUProfile(path string) error {
	cpuProfile.mu.Lock()
	defer cpuProfile.mu.Unlock()
	if cpuProfile.file != nil {
		return errors.New("ERR a CPU profile is already running")
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return errors.New("ERR " + err.Error())
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return errors.New("ERR " + err.Error())
	}
	cpuProfile.file = f
	return nil
}

// StopCPUProfile ends the profile StartCPUProfile started and closes its
// file (DEBUG PROFILE CPU STOP).
func StopCPUProfile() error {
	cpuProfile.mu.Lock()
	defer cpuProfile.mu.Unlock()
	if cpuProfile.file == nil {
		return errors.New("ERR no CPU profile is running")
	}
	pprof.StopCPUProfile()
	err := cpuProfile.file.Close()
	cpuProfile.file = nil
	if err != nil {
		return errors.New("ERR " + err.Error())
	}
	return nil
}

// WriteProfile writes the named runtime profile ("allocs", "heap",
// "goroutine", "mutex", "block") to path (DEBUG PROFILE <name> <path>).
// The allocs profile counts every sampled allocation since the process
// started: two of them, taken before and after a run, give the run's
// allocations with `go tool pprof -base`. The runtime publishes those
// counts at the end of a collection, so for "allocs" and "heap" this
// runs one (runtime.GC, a full blocking collection) first: the snapshot
// then holds every allocation up to the command.
func WriteProfile(name, path string) error {
	p := pprof.Lookup(name)
	if p == nil {
		return errors.New("ERR unknown profile '" + name + "'")
	}
	if name == "allocs" || name == "heap" {
		runtime.GC()
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return errors.New("ERR " + err.Error())
	}
	if err := p.WriteTo(f, 0); err != nil {
		_ = f.Close()
		return errors.New("ERR " + err.Error())
	}
	if err := f.Close(); err != nil {
		return errors.New("ERR " + err.Error())
	}
	return nil
}
