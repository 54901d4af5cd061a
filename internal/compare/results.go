package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Results is the whole comparison, written as results.json.
type Results struct {
	// Started is when the run began (UTC).
	Started time.Time `json:"started"`
	// ElapsedS is the whole run's length.
	ElapsedS float64 `json:"elapsed_s"`
	// Machine describes where it ran.
	Machine string `json:"machine"`
	// Settings are the options common to both topologies.
	Settings map[string]any `json:"settings"`
	// Topologies holds one result per topology, by name.
	Topologies map[string]*TopologyResult `json:"topologies"`
}

// TopologyResult is one topology's figures. The embedded Figures are the
// headline workload's (GET/SET).
type TopologyResult struct {
	Figures
	// Implementation is "shardnode" for the deployments compare starts.
	Implementation string `json:"implementation"`
	// FailoverBlackoutS, LostAckedWrites and GrowSeconds repeat the
	// headline figures of Failover and Grow (null when not run);
	// GrowSeconds is the projected whole when the rebalance was
	// time-boxed (Grow.Completed false).
	FailoverBlackoutS *float64 `json:"failover_blackout_s"`
	LostAckedWrites   *int64   `json:"lost_acked_writes"`
	GrowSeconds       *float64 `json:"grow_seconds"`
	// Workloads holds every workload's figures by name.
	Workloads map[string]*Figures `json:"workloads"`
	// Failover and Grow detail the disruptive phases.
	Failover *FailoverResult `json:"failover,omitempty"`
	Grow     *GrowResult     `json:"grow,omitempty"`
	// Keys and MemoryPerKeyB: keys preloaded, and the masters'
	// used_memory growth per key.
	Keys          int64   `json:"keys"`
	MemoryPerKeyB float64 `json:"memory_per_key_bytes"`
	// Processes is the deployment's process count (-1: unknown), of which
	// ExtraProcesses are not data nodes (ExtraProcessesWhat says which).
	Processes          int    `json:"processes"`
	ExtraProcesses     int    `json:"extra_processes"`
	ExtraProcessesWhat string `json:"extra_processes_what"`
	// Settings are the topology's own settings (failure detection).
	Settings map[string]any `json:"settings"`

	hists []namedHist
}

type namedHist struct {
	name string
	h    *hdrhistogram.Histogram
}

func newResults(opt *Options) *Results {
	return &Results{Started: time.Now().UTC().Truncate(time.Second), Topologies: map[string]*TopologyResult{},
		Machine: fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU()),
		Settings: map[string]any{"masters": opt.Masters, "replicas": opt.Replicas, "duration_s": opt.Duration.Seconds(),
			"down_after_ms": opt.DownAfter.Milliseconds(), "clients": opt.Clients, "keys": opt.Keys,
			"value_size": opt.ValueSize, "pipeline": opt.Pipeline, "multi_keys": opt.MultiKeys,
			"getset_mix": "80% GET, 20% SET", "multikey_mix": "80% MGET, 20% MSET", "persistence": "appendonly everysec"}}
}

func (r *Results) writeJSON(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	return nil
}

// round rounds x to digits decimals.
func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

// WriteTable renders the comparison as a terminal table, one column per
// topology.
func WriteTable(w io.Writer, r *Results) {
	var names []string
	for _, n := range []string{PreSharding, Cluster} {
		if r.Topologies[n] != nil {
			names = append(names, n)
		}
	}
	const lw, cw = 34, 30
	row := func(label string, cell func(t *TopologyResult) string) {
		fmt.Fprintf(w, "%-*s", lw, label)
		for _, n := range names {
			fmt.Fprintf(w, "%*s", cw, cell(r.Topologies[n]))
		}
		fmt.Fprintln(w)
	}
	rule := func() { fmt.Fprintln(w, strings.Repeat("-", lw+cw*len(names))) }
	fmt.Fprintf(w, "%-*s", lw, "")
	for _, n := range names {
		fmt.Fprintf(w, "%*s", cw, n)
	}
	fmt.Fprintln(w)
	rule()
	row("implementation", func(t *TopologyResult) string { return t.Implementation })
	row("failure detection", func(t *TopologyResult) string {
		if v, ok := t.Settings["down_after_ms"]; ok {
			return fmt.Sprintf("down-after %vms", v)
		}
		if v, ok := t.Settings["cluster_node_timeout_ms"]; ok {
			return fmt.Sprintf("node-timeout %vms", v)
		}
		return "?"
	})
	for _, wl := range workloads {
		rule()
		row(wl.name+" ops/s", func(t *TopologyResult) string {
			return figure(t, wl.name, func(f *Figures) string { return fmt.Sprintf("%.0f", f.OpsPerSec) })
		})
		row("  p50 / p99 / p99.9 ms", func(t *TopologyResult) string {
			return figure(t, wl.name, func(f *Figures) string { return fmt.Sprintf("%.2f/%.2f/%.2f", f.P50Ms, f.P99Ms, f.P999Ms) })
		})
		if wl.unit == "batch" {
			row("  (latency of one batch)", func(*TopologyResult) string { return "" })
		}
		row("  errors", func(t *TopologyResult) string {
			return figure(t, wl.name, func(f *Figures) string { return fmt.Sprint(f.Errors) })
		})
	}
	rule()
	row("kill -9 master: blackout its keys", func(t *TopologyResult) string {
		if t.Failover == nil {
			return "-"
		}
		s := fmt.Sprintf("%.2fs", t.Failover.BlackoutS)
		if !t.Failover.Recovered {
			s = ">" + s
		}
		return s
	})
	row("  blackout other keys", func(t *TopologyResult) string {
		if t.Failover == nil {
			return "-"
		}
		return fmt.Sprintf("%.2fs", t.Failover.OthersBlackoutS)
	})
	row("  acked writes lost", func(t *TopologyResult) string {
		if t.Failover == nil {
			return "-"
		}
		return fmt.Sprintf("%d of %d", t.Failover.LostAcked, t.Failover.AckedWrites)
	})
	rule()
	row("grow by one machine", func(t *TopologyResult) string {
		if t.Grow == nil {
			return "-"
		}
		if !t.Grow.Completed {
			return fmt.Sprintf("~%.0fs (%d/%d slots, %.0fs)", t.Grow.ProjectedSeconds, t.Grow.SlotsMoved, t.Grow.SlotsTotal, t.Grow.Seconds)
		}
		return fmt.Sprintf("%.2fs", t.Grow.Seconds)
	})
	row("  keys moved", func(t *TopologyResult) string {
		if t.Grow == nil {
			return "-"
		}
		return fmt.Sprint(t.Grow.KeysMoved)
	})
	row("  client errors", func(t *TopologyResult) string {
		if t.Grow == nil {
			return "-"
		}
		return fmt.Sprintf("%d of %d", t.Grow.ClientErrors, t.Grow.ClientRequests)
	})
	row("  ring change would move", func(t *TopologyResult) string {
		if t.Grow == nil || t.Grow.RingChangeKeys == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f%% of keys", 100*t.Grow.RingChangeFraction)
	})
	rule()
	row("memory per key (used_memory)", func(t *TopologyResult) string { return fmt.Sprintf("%.0f B", t.MemoryPerKeyB) })
	row("processes (extra)", func(t *TopologyResult) string {
		if t.Processes < 0 {
			return fmt.Sprintf("? (%s)", t.ExtraProcessesWhat)
		}
		return fmt.Sprintf("%d (%s)", t.Processes, t.ExtraProcessesWhat)
	})
}

func figure(t *TopologyResult, name string, f func(*Figures) string) string {
	if x := t.Workloads[name]; x != nil {
		return f(x)
	}
	return "-"
}
