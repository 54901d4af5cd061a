package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/shardis/shardis/internal/node/persist"
)

// HandleSignal is the node's reaction to SIGTERM and SIGINT, as Redis's
// signal handler and serverCron: the shutdown (final save, AOF fsync) runs
// in the background and, when the save fails, is cancelled while the
// server keeps serving; a second SIGINT during a shutdown exits at once
// (status 1) after removing the temporary RDB files this process writes.
// cmd/shardnode calls it for each signal received.
func (s *Server) HandleSignal(sig os.Signal) {
	if sig == os.Interrupt && s.shuttingDown.Load() {
		s.log.Warn("You insist... exiting now.")
		s.removeTempRDBs()
		os.Exit(1)
	}
	name := "shutdown signal"
	switch sig {
	case os.Interrupt:
		name = "SIGINT"
	case syscall.SIGTERM:
		name = "SIGTERM"
	}
	if s.loading.Load() {
		s.log.Warn("Received shutdown signal during loading, scheduling shutdown.")
	} else {
		s.log.Warn(fmt.Sprintf("Received %s scheduling shutdown...", name))
	}
	go func() {
		s.log.Warn("User requested shutdown...")
		_ = s.Shutdown(context.Background())
	}()
}

// removeTempRDBs deletes the temp-<pid>-*.rdb files of this process.
func (s *Server) removeTempRDBs() {
	if s.persist == nil {
		return
	}
	dir := filepath.Dir(s.persist.RDBPath())
	files, _ := filepath.Glob(filepath.Join(dir, persist.TempRDBPrefix()+"*.rdb"))
	for _, f := range files {
		_ = os.Remove(f)
	}
}
