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
