package node

import (
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/info"
	"github.com/shardis/shardis/internal/node/pubsub"
)

func registerInfoCommands(t *commandTable) {
	t.add(&command{name: "info", arity: -1, flags: flagLoading | flagStale, fn: cmdInfo, group: "server", since: "1.0.0"})
}

// infoState holds what INFO computes between calls (package info).
type infoState = info.State

// INFO [section [section ...]]
func cmdInfo(c *Client, args [][]byte) {
	c.addVerbatim(c.srv.infoString(args[1:]))
}

// infoString renders INFO for the given section arguments (package info
// has Redis 7.0's section order, headers and field names).
func (s *Server) infoString(args [][]byte) string {
	return info.Render(args, func(sec info.Section, b *strings.Builder) {
		switch sec {
		case info.Server:
			s.infoServer().Write(b)
		case info.Clients:
			s.infoClients().Write(b)
		case info.Memory:
			s.infoMemory().Write(b)
		case info.Persistence:
			s.infoPersistence(b)
		case info.Stats:
			s.infoStats().Write(b)
		case info.Replication:
			s.infoReplication(b)
		case info.CPU:
			info.WriteCPU(b)
		case info.Commandstats:
			s.infoCommandStats(b)
		case info.Errorstats:
			s.stats.errs.Write(b)
		case info.Cluster:
			info.Field(b, "cluster_enabled", s.cfg.Bool(config.DirClusterEnabled))
			if s.cluster != nil {
				s.cluster.Migrations().InfoFields(b) // whole-slot migration (package slotmig)
			}
		case info.Keyspace:
			dbs := make([]info.DB, len(s.dbs))
			for i, db := range s.dbs {
				dbs[i] = info.DB{Index: i, Keys: db.Size(), Expires: db.Expires.Load(), AvgTTL: db.AvgTTL.Load()}
			}
			info.WriteKeyspace(b, dbs)
		}
	})
}

func (s *Server) infoServer() info.ServerInfo {
	now := s.now()
	exe, _ := os.Executable()
	port, _ := strconv.Atoi(s.cfg.Get(config.DirPort))
	return info.ServerInfo{
		Version: Version, Cluster: s.cfg.Bool(config.DirClusterEnabled), OS: info.Uname(),
		GoVersion: runtime.Version(), PID: os.Getpid(), RunID: s.runID, Port: port,
		NowUsec: now.UnixMicro(), Uptime: int64(now.Sub(s.startTime).Seconds()),
		Hz: s.cfg.Int(config.DirHz), LRUClock: int64(s.lruClock() & (1<<24 - 1)),
		Executable: exe, ConfigFile: s.cfg.Path(),
	}
}

func (s *Server) infoClients() info.ClientsInfo {
	var n, replicas int
	s.forEachClient(func(c *Client) {
		n++
		if c.hasFlag(clientReplica) && !c.hasFlag(clientMonitor) {
			replicas++
		}
	})
	return info.ClientsInfo{
		Connected: n - replicas, ClusterConnections: s.clusterConnections(),
		MaxClients: s.cfg.Int(config.DirMaxclients), Blocked: s.blockedClients.Load(), Paused: s.pause.Waiting(),
	}
}

func (s *Server) infoMemory() info.MemoryInfo {
	used := s.usedMemory()
	nScripts, scriptsMem := s.scriptEngine().Stats()
	nLibs, nFuncs := s.scriptEngine().FunctionCount()
	return info.MemoryInfo{
		Used: used, Peak: s.info.Peak(used), RSS: info.ProcessRSS(), System: info.TotalSystemMemory(),
		MaxMemory: s.cfg.Int(config.DirMaxmemory), Policy: s.cfg.Get(config.DirMaxmemoryPolicy),
		ScriptsEval: int64(scriptsMem), CachedScripts: nScripts, Functions: nFuncs, Libs: nLibs,
		ClusterLinks: int64(s.clusterLinksMemory()),
	}
}

// infoPersistence writes the Persistence section's fields. Persistence
// replaces the defaults by setting s.persistInfo.
func (s *Server) infoPersistence(b *strings.Builder) {
	if s.persistInfo != nil {
		s.persistInfo(b)
		return
	}
	info.PersistenceInfo{
		Loading: s.loading.Load(), AsyncLoading: s.asyncLoading.Load(),
		Dirty: s.dirty.Load(), LastSave: s.lastSave.Load(), AOF: s.cfg.Bool(config.DirAppendonly),
	}.Write(b)
}

func (s *Server) infoStats() info.StatsInfo {
	st := &s.stats
	full, pok, perr := s.repl.syncCounters()
	reads, writes := s.ioCalls()
	return info.StatsInfo{
		Connections: st.connectionsReceived.Load(), Commands: st.commands.Load(),
		OpsPerSec: s.info.Ops(time.Now(), st.commands.Load()),
		NetInput:  st.netInput.Load(), NetOutput: st.netOutput.Load(), Rejected: st.rejectedConnections.Load(),
		SyncFull: full, SyncPartialOK: pok, SyncPartialErr: perr,
		ExpiredKeys: st.expiredKeys.Load(), ExpireCycleCPU: st.expireCycleCPU.Load(), EvictedKeys: st.evictedKeys.Load(),
		Hits: st.keyspaceHits.Load(), Misses: st.keyspaceMisses.Load(),
		PubsubChannels: s.pubsub.Len(pubsub.Channel), PubsubPatterns: s.pubsub.Len(pubsub.Pattern),
		ErrorReplies: st.errorReplies.Load(), ReadsProcessed: reads, WritesProcessed: writes,
	}
}

// infoReplication writes the Replication section's fields: s.replInfo if
// set, else the replication engine's renderer (replication.go), else a
// master without replicas.
func (s *Server) infoReplication(b *strings.Builder) {
	switch {
	case s.replInfo != nil:
		s.replInfo(b)
	case s.repl != nil:
		s.repl.info(b)
	default:
		info.WriteLoneMaster(b, s.runID, s.cfg.Int(config.DirReplBacklogSize))
	}
}

// allCommands returns every command and subcommand, sorted by full name.
func (s *Server) allCommands() []*command {
	var out []*command
	for _, cmd := range s.table.cmds {
		out = append(out, cmd)
		for _, sub := range cmd.subs {
			out = append(out, sub)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].fullName() < out[j].fullName() })
	return out
}

func (s *Server) infoCommandStats(b *strings.Builder) {
	cmds := s.allCommands()
	stats := make([]info.CommandStat, len(cmds))
	for i, cmd := range cmds {
		st := &cmd.stats
		stats[i] = info.CommandStat{Name: cmd.fullName(), Calls: st.calls.Load(), Usec: st.usec.Load(),
			Rejected: st.rejected.Load(), Failed: st.failed.Load()}
	}
	info.WriteCommandStats(b, stats)
}
