package node

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDebugTrace: DEBUG TRACE START writes a Go execution trace of the
// server until DEBUG TRACE STOP; a second START, a STOP without a trace,
// an unwritable path and a bad subcommand are errors.
func TestDebugTrace(t *testing.T) {
	s := startServer(t, "enable-debug-command", "yes")
	cl := s.client(t)
	c := ctx(t)
	path := filepath.Join(t.TempDir(), "server.trace")
	if err := cl.Do(c, "DEBUG", "TRACE", "STOP").Err(); err == nil || !strings.Contains(err.Error(), "no trace is running") {
		t.Fatalf("STOP without a trace: %v", err)
	}
	if err := cl.Do(c, "DEBUG", "TRACE", "START", filepath.Join(t.TempDir(), "missing", "x.trace")).Err(); err == nil {
		t.Fatal("START into a missing directory succeeded")
	}
	if err := cl.Do(c, "DEBUG", "TRACE", "START", path).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cl.Do(c, "DEBUG", "TRACE", "START", path).Err(); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second START: %v", err)
	}
	for i := 0; i < 100; i++ {
		if err := cl.Set(c, "k", i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.Do(c, "DEBUG", "TRACE", "STOP").Err(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A runtime/trace file starts with "go 1.N trace".
	if !bytes.HasPrefix(b, []byte("go 1.")) || len(b) < 1000 {
		t.Fatalf("trace file: %d bytes, starts %q", len(b), b[:min(len(b), 16)])
	}
	if err := cl.Do(c, "DEBUG", "TRACE", "BOGUS").Err(); err == nil || !strings.Contains(err.Error(), "unknown subcommand") {
		t.Fatalf("bad subcommand: %v", err)
	}
	// A new trace can start after the first stopped.
	if err := cl.Do(c, "DEBUG", "TRACE", "START", path).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cl.Do(c, "DEBUG", "TRACE", "STOP").Err(); err != nil {
		t.Fatal(err)
	}
}

// TestDebugProfile: DEBUG PROFILE CPU START/STOP writes a pprof CPU
// profile, DEBUG PROFILE ALLOCS <path> a snapshot of the allocation
// profile; a second START, a STOP without a profile, an unknown profile
// and a bad form are errors; refused without enable-debug-command.
func TestDebugProfile(t *testing.T) {
	s := startServer(t, "enable-debug-command", "yes")
	cl := s.client(t)
	c := ctx(t)
	dir := t.TempDir()
	if err := cl.Do(c, "DEBUG", "PROFILE", "CPU", "STOP").Err(); err == nil || !strings.Contains(err.Error(), "no CPU profile is running") {
		t.Fatalf("STOP without a profile: %v", err)
	}
	cpu := filepath.Join(dir, "cpu.pprof")
	if err := cl.Do(c, "DEBUG", "PROFILE", "CPU", "START", cpu).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cl.Do(c, "DEBUG", "PROFILE", "CPU", "START", cpu).Err(); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second START: %v", err)
	}
	for i := 0; i < 100; i++ {
		if err := cl.Set(c, "k", i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.Do(c, "DEBUG", "PROFILE", "CPU", "STOP").Err(); err != nil {
		t.Fatal(err)
	}
	allocs := filepath.Join(dir, "allocs.pprof")
	if err := cl.Do(c, "DEBUG", "PROFILE", "ALLOCS", allocs).Err(); err != nil {
		t.Fatal(err)
	}
	// A pprof profile is a gzipped protocol buffer.
	for _, p := range []string{cpu, allocs} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Fatalf("%s: %d bytes, not gzip", p, len(b))
		}
	}
	if err := cl.Do(c, "DEBUG", "PROFILE", "NOSUCH", filepath.Join(dir, "x")).Err(); err == nil || !strings.Contains(err.Error(), "unknown profile") {
		t.Fatalf("unknown profile: %v", err)
	}
	if err := cl.Do(c, "DEBUG", "PROFILE", "CPU").Err(); err == nil || !strings.Contains(err.Error(), "unknown subcommand") {
		t.Fatalf("bad form: %v", err)
	}
	off := startServer(t)
	path := filepath.Join(dir, "refused.pprof")
	if err := off.client(t).Do(c, "DEBUG", "PROFILE", "ALLOCS", path).Err(); err == nil || !strings.Contains(err.Error(), "DEBUG command not allowed") {
		t.Fatalf("without enable-debug-command: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("refused DEBUG PROFILE wrote %s (%v)", path, err)
	}
}
