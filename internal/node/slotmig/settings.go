package slotmig

import (
	"time"

	"github.com/shardis/shardis/internal/node/config"
)

// SettingsFrom reads a migration's Settings from the directives.
func SettingsFrom(cfg *config.Config) Settings {
	return Settings{
		WritePauseTimeout: time.Duration(cfg.Int(config.DirClusterSlotMigrationWritePauseTimeout)) * time.Millisecond,
		HandoffMaxLag:     int64(cfg.Int(config.DirClusterSlotMigrationHandoffMaxLagBytes)),
		ReplTimeout:       time.Duration(cfg.Int(config.DirReplTimeout)) * time.Second,
		MasterUser:        cfg.Get(config.DirMasteruser),
		MasterAuth:        cfg.Get(config.DirMasterauth),
	}
}
