package admin

import (
	"errors"
	"os"
	"runtime"
	"runtime/pprof"
)

// cpuRun is the CPU profile StartCPUProfile writes, if any.
var cpuRun = fileRun{what: "CPU profile"}

// StartCPUProfile starts a CPU profile (runtime/pprof, read with `go tool
// pprof`) of the process into path (DEBUG PROFILE CPU START). Its errors'
// texts are the replies.
func StartCPUProfile(path string) error {
	return cpuRun.start(path, func(f *os.File) error { return pprof.StartCPUProfile(f) })
}

// StopCPUProfile ends the profile StartCPUProfile started and closes its
// file (DEBUG PROFILE CPU STOP).
func StopCPUProfile() error { return cpuRun.stop(pprof.StopCPUProfile) }

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
	var once fileRun
	if err := once.start(path, func(f *os.File) error { return p.WriteTo(f, 0) }); err != nil {
		return err
	}
	return once.stop(func() {})
}
