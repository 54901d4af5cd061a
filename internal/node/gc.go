package node

import (
	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/gcpace"
)

// tuneGCAfterCycle is the cron's tuneGC: it runs only if a collection
// finished since its last run (seen is the caller's record; package
// gcpace).
func (s *Server) tuneGCAfterCycle(seen *uint64) { gcpace.AfterCycle(seen, s.tuneGC) }

// tuneGC sets the collector's percentage from gc-percent, gc-min-headroom
// and the live heap (gcpace.Tune). The cron calls it after every
// collection (tuneGCAfterCycle); configuration changes call it at once.
func (s *Server) tuneGC() {
	gcpace.Tune(s.cfg.Int(config.DirGCPercent), s.cfg.Int(config.DirGCMinHeadroom))
}
