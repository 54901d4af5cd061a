package clusternode

import (
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/cluster/runner"
	"github.com/shardis/shardis/internal/node/config"
)

// ErrBusPortTooHigh is Redis's text when the bus port (the port plus
// cluster.PortIncr unless cluster-port is set) is above 65535.
var ErrBusPortTooHigh = errors.New("Redis port number too high. Cluster communication port is 10,000 port numbers higher than your Redis port. Your Redis port number must be 55535 or less.")

// MachineConfig derives the cluster machine's settings from the
// directives; local answers the machine's questions about the node's data.
func MachineConfig(c *config.Config, local cluster.Local) cluster.Config {
	cfg := cluster.DefaultConfig()
	port := int(c.Int(config.DirPort))
	if p := int(c.Int(config.DirClusterAnnouncePort)); p != 0 {
		port = p
	}
	cfg.Port = port
	switch {
	case c.Int(config.DirClusterAnnounceBusPort) != 0:
		cfg.CPort = int(c.Int(config.DirClusterAnnounceBusPort))
	case c.Int(config.DirClusterPort) != 0:
		cfg.CPort = int(c.Int(config.DirClusterPort))
	default:
		cfg.CPort = int(c.Int(config.DirPort)) + cluster.PortIncr
	}
	cfg.IP = c.Get(config.DirClusterAnnounceIP)
	cfg.Hostname = c.Get(config.DirClusterAnnounceHostname)
	cfg.NodeTimeout = time.Duration(c.Int(config.DirClusterNodeTimeout)) * time.Millisecond
	cfg.RequireFullCoverage = c.Bool(config.DirClusterRequireFullCoverage)
	cfg.AllowReadsWhenDown = c.Bool(config.DirClusterAllowReadsWhenDown)
	cfg.AllowPubsubShardWhenDown = c.Bool(config.DirClusterAllowPubsubshardWhenDown)
	cfg.MigrationBarrier = int(c.Int(config.DirClusterMigrationBarrier))
	cfg.AllowReplicaMigration = c.Bool(config.DirClusterAllowReplicaMigration)
	cfg.ReplicaValidityFactor = int(c.Int(config.DirClusterReplicaValidityFactor))
	cfg.ReplicaNoFailover = c.Bool(config.DirClusterReplicaNoFailover)
	cfg.MinReplicasAck = int(c.Int(config.DirMinReplicasAck))
	cfg.ReplPingReplicaPeriod = time.Duration(c.Int(config.DirReplPingReplicaPeriod)) * time.Second
	cfg.Local = local
	return cfg
}

// NewMachine builds the cluster machine of cfg with a randomly seeded
// generator (node IDs, election delays).
func NewMachine(cfg cluster.Config) (*cluster.Machine, error) {
	var seed [16]byte
	_, _ = crand.Read(seed[:])
	rng := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
	return cluster.New(cfg, rng)
}

// RunnerOptions are the runner's settings from the directives, as Redis's
// clusterInit: the bus listens on the bus port at every bind address (an
// optional "-addr" stays optional), nodes.conf is cluster-config-file,
// relative to dir. It fails with ErrBusPortTooHigh.
func RunnerOptions(c *config.Config, log *slog.Logger) (runner.Options, error) {
	busPort := int(c.Int(config.DirClusterPort))
	if busPort == 0 {
		busPort = int(c.Int(config.DirPort)) + cluster.PortIncr
	}
	if busPort > 65535 {
		return runner.Options{}, ErrBusPortTooHigh
	}
	var addrs []string
	for _, b := range strings.Fields(c.Get(config.DirBind)) {
		host, optional := config.BindHost(b)
		a := net.JoinHostPort(host, strconv.Itoa(busPort))
		if optional {
			a = "-" + a
		}
		addrs = append(addrs, a)
	}
	file := c.Get(config.DirClusterConfigFile)
	if !filepath.IsAbs(file) {
		file = filepath.Join(c.Get(config.DirDir), file)
	}
	return runner.Options{
		ListenAddrs:  addrs,
		ConfigFile:   file,
		SendBufLimit: c.Int(config.DirClusterLinkSendbufLimit),
		Logger:       log,
	}, nil
}
