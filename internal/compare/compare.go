// Package compare measures the two high-availability topologies of
// shardis side by side on the same work: pre-sharding (shards of
// shardnode watched by Sentinels, reached through client/shardedpool) and
// Redis Cluster (shardnodes in cluster mode, reached through
// client/cluster). It is the engine of "shardnode compare":
//
//   - topology.go: bring up (internal/deploy) or connect to each topology,
//     and what the phases need from it (a client, its masters, which
//     shard a key lives on, killing a master);
//   - workload.go: the throughput and latency workloads, recorded in HDR
//     histograms;
//   - failover.go: kill -9 of one master under unique writes: blackout on
//     its keys and on the others, acknowledged writes lost;
//   - grow.go: each topology's own way of adding a machine;
//   - results.go: results.json and the terminal table;
//   - plot.go: the picture (latency distributions, failover timelines).
//
// Both topologies run one after the other on the same machine, with the
// same failure-detection time (Sentinel down-after-milliseconds equals
// cluster-node-timeout), the same persistence (appendonly everysec) and
// the same client concurrency.
package compare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Topology names, the keys of Results.Topologies.
const (
	PreSharding = "presharding"
	Cluster     = "cluster"
)

// Phases, Options.Phases.
const (
	PhaseWorkloads = "workloads"
	PhaseGrow      = "grow"
	PhaseFailover  = "failover"
)

// Options configures [Run]. Zero values mean the documented default.
type Options struct {
	// Masters is the number of masters of each topology. Default 3; a
	// cluster needs at least 3.
	Masters int
	// Replicas is the number of replicas of each master. Default 1.
	Replicas int
	// Sentinels is the number of Sentinels of the pre-sharding topology.
	// Default 3.
	Sentinels int
	// Duration is how long each workload runs. Default 20s.
	Duration time.Duration
	// DownAfter is the failure-detection time of both topologies: the
	// Sentinels' down-after-milliseconds and cluster-node-timeout.
	// Default 2s.
	DownAfter time.Duration
	// GrowTimeout bounds the cluster's rebalance: when it has not
	// finished, it stops (the open slot is fixed) and the result gives
	// the slots moved and the projected whole. Default 60s; -1: no bound.
	GrowTimeout time.Duration
	// Clients is the number of concurrent client goroutines of every
	// workload. Default 16.
	Clients int
	// Keys is the number of keys preloaded and used by the workloads.
	// Default 100000.
	Keys int
	// ValueSize is the size of every value written, in bytes. Default 64.
	ValueSize int
	// Pipeline is the number of commands of a pipelined batch. Default 16.
	Pipeline int
	// MultiKeys is the number of keys of one MGET or MSET. Default 10.
	MultiKeys int
	// Out is the output directory (results.json, compare.png and the
	// deployments' data). Default "compare".
	Out string
	// Topologies selects what runs, among PreSharding and Cluster.
	// Default both.
	Topologies []string
	// Phases selects the phases, among PhaseWorkloads, PhaseGrow and
	// PhaseFailover (they always run in that order). Default all.
	Phases []string

	// Sentinels and MasterNames, when set, use an existing pre-sharding
	// deployment instead of starting one.
	SentinelAddrs, MasterNames []string
	// ClusterAddr, when set, uses an existing cluster instead of starting
	// one.
	ClusterAddr string
	// Disruptive allows the kill and growth phases against existing
	// deployments (they always run against the ones compare starts).
	Disruptive bool
	// GrowNode is an empty node ("host:port") that the growth phase of an
	// existing deployment adds; without it that phase is skipped.
	GrowNode string
	// Label names the implementation in the results ("shardnode" for the
	// deployments compare starts; default "external" otherwise).
	Label string

	// Executable is the shardnode binary the deployments run. Default:
	// os.Executable().
	Executable string
	// Progress receives live progress lines. Default: discarded.
	Progress io.Writer
}

func (o *Options) defaulted() (Options, error) {
	opt := *o
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&opt.Masters, 3)
	def(&opt.Sentinels, 3)
	def(&opt.Clients, 16)
	def(&opt.Keys, 100000)
	def(&opt.ValueSize, 64)
	def(&opt.Pipeline, 16)
	def(&opt.MultiKeys, 10)
	if o.Replicas == 0 {
		opt.Replicas = 1
	} else if o.Replicas < 0 {
		opt.Replicas = 0
	}
	if opt.Duration == 0 {
		opt.Duration = 20 * time.Second
	}
	if opt.DownAfter == 0 {
		opt.DownAfter = 2 * time.Second
	}
	if opt.GrowTimeout == 0 {
		opt.GrowTimeout = 60 * time.Second
	} else if opt.GrowTimeout < 0 {
		opt.GrowTimeout = 0
	}
	if opt.Out == "" {
		opt.Out = "compare"
	}
	if opt.Progress == nil {
		opt.Progress = io.Discard
	}
	if len(opt.Topologies) == 0 {
		if opt.external() {
			if len(opt.SentinelAddrs) > 0 {
				opt.Topologies = append(opt.Topologies, PreSharding)
			}
			if opt.ClusterAddr != "" {
				opt.Topologies = append(opt.Topologies, Cluster)
			}
		} else {
			opt.Topologies = []string{PreSharding, Cluster}
		}
	}
	if opt.Label == "" {
		opt.Label = "shardnode"
		if opt.external() {
			opt.Label = "external"
		}
	}
	switch {
	case opt.Duration < 100*time.Millisecond:
		return opt, errors.New("compare: --duration below 100ms")
	case opt.Masters < 3 && !opt.external():
		return opt, errors.New("compare: --masters must be at least 3 (a Redis Cluster needs 3 masters)")
	case opt.MultiKeys < 2, opt.Pipeline < 1, opt.Clients < 1, opt.Keys < 100, opt.ValueSize < 1:
		return opt, errors.New("compare: --multi-keys >= 2, --pipeline, --clients >= 1, --keys >= 100, --value-size >= 1")
	case len(opt.SentinelAddrs) > 0 && len(opt.MasterNames) == 0:
		return opt, errors.New("compare: --sentinels needs --master-names")
	}
	if len(opt.Phases) == 0 {
		opt.Phases = []string{PhaseWorkloads, PhaseGrow, PhaseFailover}
	}
	for _, p := range opt.Phases {
		if p != PhaseWorkloads && p != PhaseGrow && p != PhaseFailover {
			return opt, fmt.Errorf("compare: unknown phase %q", p)
		}
	}
	for _, t := range opt.Topologies {
		if t != PreSharding && t != Cluster {
			return opt, fmt.Errorf("compare: unknown topology %q", t)
		}
	}
	if opt.Executable == "" && !opt.external() {
		exe, err := os.Executable()
		if err != nil {
			return opt, fmt.Errorf("compare: %w", err)
		}
		opt.Executable = exe
	}
	return opt, nil
}

// external reports whether the deployments exist already.
func (o *Options) external() bool { return len(o.SentinelAddrs) > 0 || o.ClusterAddr != "" }

// runs reports whether a phase runs: the disruptive ones (growth, kill)
// against an existing deployment only with Disruptive.
func (o *Options) runs(phase string) bool {
	if phase != PhaseWorkloads && o.external() && !o.Disruptive {
		return false
	}
	return slices.Contains(o.Phases, phase)
}

// Run brings up (or connects to) each topology in turn, runs every phase
// on it, stops it, and writes results.json and compare.png to opt.Out.
func Run(ctx context.Context, o Options) (*Results, error) {
	opt, err := o.defaulted()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opt.Out, 0o755); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	res := newResults(&opt)
	out := opt.Progress
	start := time.Now()
	for _, name := range opt.Topologies {
		tr, err := runTopology(ctx, &opt, name)
		if err != nil {
			return nil, err
		}
		res.Topologies[name] = tr
	}
	res.ElapsedS = round(time.Since(start).Seconds(), 1)
	if err := res.writeJSON(filepath.Join(opt.Out, "results.json")); err != nil {
		return nil, err
	}
	if err := writePlot(res, filepath.Join(opt.Out, "compare.png")); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "\nwrote %s and %s (%.0fs in all)\n\n", filepath.Join(opt.Out, "results.json"),
		filepath.Join(opt.Out, "compare.png"), time.Since(start).Seconds())
	return res, nil
}

// runTopology runs every phase on one topology.
func runTopology(ctx context.Context, opt *Options, name string) (*TopologyResult, error) {
	out := opt.Progress
	fmt.Fprintf(out, "\n=== %s ===\n", name)
	t, err := openTarget(ctx, opt, name)
	if err != nil {
		return nil, err
	}
	defer t.close()
	tr := &TopologyResult{Implementation: opt.Label, Settings: t.settings, Workloads: map[string]*Figures{},
		Processes: t.processes, ExtraProcesses: t.extraProcesses, ExtraProcessesWhat: t.extraWhat}
	base, err := t.memory(ctx)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "%s: preloading %d keys (+%d tagged)\n", name, opt.Keys, opt.Keys/10)
	t0 := time.Now()
	if err := preload(ctx, opt, t); err != nil {
		return nil, err
	}
	after, err := t.memory(ctx)
	if err != nil {
		return nil, err
	}
	tr.Keys = after.keys - base.keys
	if tr.Keys > 0 {
		tr.MemoryPerKeyB = round(float64(after.used-base.used)/float64(tr.Keys), 1)
	}
	fmt.Fprintf(out, "%s: preloaded %d keys in %.1fs, %.0f bytes of used_memory per key on the masters\n",
		name, tr.Keys, time.Since(t0).Seconds(), tr.MemoryPerKeyB)
	for _, w := range workloads {
		if !opt.runs(PhaseWorkloads) {
			break
		}
		f, err := runWorkload(ctx, opt, t, w)
		if err != nil {
			return nil, err
		}
		tr.Workloads[w.name] = f
		tr.hists = append(tr.hists, namedHist{w.name, f.hist})
	}
	if f := tr.Workloads[workloads[0].name]; f != nil {
		tr.Figures = *f
	}
	if opt.runs(PhaseGrow) {
		g, err := runGrow(ctx, opt, t)
		if err != nil {
			return nil, err
		}
		if g != nil {
			tr.Grow = g
			gs := g.Seconds
			if !g.Completed {
				gs = g.ProjectedSeconds
			}
			tr.GrowSeconds = &gs
		}
	}
	if opt.runs(PhaseFailover) {
		fo, err := runFailover(ctx, opt, t)
		if err != nil {
			return nil, err
		}
		tr.Failover = fo
		tr.FailoverBlackoutS = &fo.BlackoutS
		tr.LostAckedWrites = &fo.LostAcked
	}
	return tr, nil
}
