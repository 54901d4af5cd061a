package persist

import (
	"strings"
	"sync/atomic"

	"github.com/shardis/shardis/internal/node/config"
)

// SettingsCache holds the Settings built from one configuration snapshot.
// Its zero value is empty.
type SettingsCache struct {
	p atomic.Pointer[cachedSettings]
}

type cachedSettings struct {
	snap *config.Snapshot
	st   Settings
}

// Get returns the directives persistence reads from c, rebuilt when the
// configuration changes (every CONFIG SET publishes a new snapshot);
// limits gives the encoding thresholds of loaded values.
func (sc *SettingsCache) Get(c *config.Config, limits func() Limits) *Settings {
	sn := c.Snapshot()
	if cs := sc.p.Load(); cs != nil && cs.snap == sn && sn != nil {
		return &cs.st
	}
	cs := &cachedSettings{snap: sn, st: Settings{
		Dir:                        c.Get(config.DirDir),
		DBFilename:                 c.Get(config.DirDbfilename),
		Save:                       c.Get(config.DirSave),
		RDBCompression:             c.Bool(config.DirRdbcompression),
		RDBChecksum:                c.Bool(config.DirRdbchecksum),
		RDBSaveIncrementalFsync:    c.Bool(config.DirRDBSaveIncrementalFsync),
		RDBKeySaveDelay:            c.Int(config.DirRDBKeySaveDelay),
		KeyLoadDelay:               c.Int(config.DirKeyLoadDelay),
		Limits:                     limits(),
		AppendOnly:                 c.Bool(config.DirAppendonly),
		AppendDirname:              c.Get(config.DirAppenddirname),
		AppendFilename:             c.Get(config.DirAppendfilename),
		AppendFsync:                c.Get(config.DirAppendfsync),
		AutoAOFRewritePercentage:   c.Int(config.DirAutoAOFRewritePercentage),
		AutoAOFRewriteMinSize:      c.Int(config.DirAutoAOFRewriteMinSize),
		AOFUseRDBPreamble:          c.Bool(config.DirAOFUseRDBPreamble),
		AOFRewriteIncrementalFsync: c.Bool(config.DirAOFRewriteIncrementalFsync),
		AOFLoadTruncated:           c.Bool(config.DirAOFLoadTruncated),
	}}
	switch pol := c.Get(config.DirMaxmemoryPolicy); {
	case strings.HasSuffix(pol, "-lru"):
		cs.st.LRU = "lru"
	case strings.HasSuffix(pol, "-lfu"):
		cs.st.LRU = "lfu"
	}
	if sn != nil {
		sc.p.Store(cs)
	}
	return &cs.st
}
