package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Sentinel started on the port of a running one cannot bind. As
// redis-sentinel, it writes the failure to its log file, nothing to
// stderr, and exits with status 1: Redis's Sentinel suite (11-port-0
// leaves a Sentinel running that the next file's init starts again) counts
// any output on an instance's stderr as a failed test.
func TestSentinelBindFailureGoesToTheLog(t *testing.T) {
	bin := shardnodeBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	writeConf := func(name string) (conf, dir string) {
		dir = filepath.Join(t.TempDir(), name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		conf = filepath.Join(dir, "sentinel.conf")
		text := "port " + strconv.Itoa(port) + "\ndir " + dir + "\nlogfile log.txt\n"
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return conf, dir
	}

	conf1, _ := writeConf("sentinel_1")
	first := asMain(exec.Command(bin, "sentinel", conf1))
	var stderr1 bytes.Buffer
	first.Stderr = &stderr1
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- first.Wait() }()
	t.Cleanup(func() {
		_ = first.Process.Kill()
		<-exited
	})
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	ping := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return rdb.Ping(ctx).Err()
	}
	deadline := time.Now().Add(20 * time.Second)
	for ping() != nil {
		select {
		case err := <-exited:
			t.Fatalf("first Sentinel exited: %v; stderr %q", err, stderr1.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("first Sentinel does not answer PING")
		}
		time.Sleep(20 * time.Millisecond)
	}

	conf2, dir2 := writeConf("sentinel_2")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	second := asMain(exec.CommandContext(ctx, bin, "sentinel", conf2))
	var stdout2, stderr2 bytes.Buffer
	second.Stdout, second.Stderr = &stdout2, &stderr2
	err = second.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("second Sentinel: %v, want exit status 1 (stderr %q)", err, stderr2.String())
	}
	if stderr2.Len() != 0 {
		t.Errorf("second Sentinel wrote to stderr: %q", stderr2.String())
	}
	log, err := os.ReadFile(filepath.Join(dir2, "log.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := "Failed listening on port " + strconv.Itoa(port) + " (TCP), aborting."
	if !strings.Contains(string(log), want) || !strings.Contains(string(log), "address already in use") {
		t.Errorf("log.txt = %q, want %q and the bind error", log, want)
	}
	if err := ping(); err != nil {
		t.Errorf("first Sentinel after the second's attempt: %v", err)
	}
}
