package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A relative logfile lands inside dir, as redis-server (which changes into
// dir) writes it: the cluster test harness writes "dir ./redis_N" and
// "logfile log.txt" and then globs */log.txt.
func TestLogfileRelativeToDir(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "redis_0")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(conf, []byte("port 0\ndir "+dir+"\nlogfile log.txt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseArgs([]string{conf})
	if err != nil {
		t.Fatal(err)
	}
	logger, closeLog, err := newLogger(cfg)
	if err != nil {
		t.Fatal(err)
	}
	logger.Warn("hello from the test")
	closeLog()
	b, err := os.ReadFile(filepath.Join(dir, "log.txt"))
	if err != nil {
		t.Fatalf("log not in dir: %v", err)
	}
	if !strings.Contains(string(b), "hello from the test") {
		t.Fatalf("log.txt = %q", b)
	}
	abs := filepath.Join(base, "abs.log")
	cfg, err = parseArgs([]string{conf, "--logfile", abs})
	if err != nil {
		t.Fatal(err)
	}
	if got := logfilePath(cfg); got != abs {
		t.Fatalf("absolute logfile = %q, want %q", got, abs)
	}
}
