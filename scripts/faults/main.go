// Command faults is the fault harness's driver (see internal/faults and
// run.sh). Subcommands:
//
//	faults run -topology sentinel,cluster -fault kill9,... -setting redis,shardnode -runs 1 -out results.jsonl [-cluster-replicas N]
//	faults table results.jsonl ...     print the Markdown table of results
//	faults cleanup                     remove namespaces a crashed run left
//	faults check RUNDIR                re-check a run's register history (writes RUNDIR/register.html if illegal)
//	faults worker ...                  one client worker (started by run inside a client namespace)
//
// run must be started as root (it creates network namespaces); it runs one
// scenario at a time and appends one JSON line per run to -out.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/shardis/shardis/internal/faults"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: faults run|table|cleanup|worker [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runCmd(os.Args[2:])
	case "table":
		err = tableCmd(os.Args[2:])
	case "cleanup":
		var removed []string
		removed, err = faults.Cleanup()
		for _, r := range removed {
			fmt.Println("removed", r)
		}
	case "worker":
		err = workerCmd(os.Args[2:])
	case "check":
		err = checkCmd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(1)
	}
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func runCmd(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	topos := fs.String("topology", "sentinel,cluster", "topologies, comma separated")
	fl := fs.String("fault", strings.Join(faults.Faults, ","), "faults, comma separated")
	sets := fs.String("setting", "redis,shardnode", "settings, comma separated")
	runs := fs.Int("runs", 1, "runs per cell")
	shardnode := fs.String("shardnode", "", "shardnode binary (required)")
	dir := fs.String("dir", "/tmp/shardis-faults", "directory for the runs' logs and histories")
	out := fs.String("out", "", "file the results are appended to as JSON lines (required)")
	clusterReplicas := fs.Int("cluster-replicas", 0, "replicas per cluster master, overriding the setting's (0: the setting's; crash-in-failover adds one)")
	_ = fs.Parse(args)
	if *shardnode == "" || *out == "" {
		return fmt.Errorf("-shardnode and -out are required")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	sn, err := filepath.Abs(*shardnode)
	if err != nil {
		return err
	}
	env := faults.Env{Shardnode: sn, Self: self, Dir: *dir}
	f, err := os.OpenFile(*out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if removed, _ := faults.Cleanup(); len(removed) > 0 {
		log.Warn("removed namespaces left by an earlier run", "namespaces", removed)
	}
	var results []faults.Result
	for r := 1; r <= *runs; r++ {
		for _, topo := range split(*topos) {
			for _, fault := range split(*fl) {
				for _, sname := range split(*sets) {
					s, ok := faults.Settings[sname]
					if !ok {
						return fmt.Errorf("unknown setting %q", sname)
					}
					if *clusterReplicas > 0 {
						s.ClusterReplicas = *clusterReplicas
					}
					sc := faults.Scenario{Topology: topo, Fault: fault, Setting: s}
					log.Info("run", "topology", topo, "fault", fault, "setting", sname, "run", r)
					res := faults.Run(context.Background(), env, sc, r, log)
					b, _ := json.Marshal(res)
					if _, err := f.Write(append(b, '\n')); err != nil {
						return err
					}
					log.Info("result", "topology", topo, "fault", fault, "setting", sname,
						"acked", res.Set.Acked, "lost", res.Set.Lost, "unknown", res.Set.Unknown,
						"unavailable", time.Duration(res.Set.UnavailableNs).Round(time.Millisecond),
						"linearizable", res.Linearizable, "notes", res.Notes, "err", res.Err,
						"seconds", fmt.Sprintf("%.1f", res.Seconds))
					results = append(results, res)
				}
			}
		}
	}
	fmt.Print(faults.Table(results))
	return nil
}

func tableCmd(args []string) error {
	var results []faults.Result
	for _, p := range args {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			var r faults.Result
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			results = append(results, r)
		}
	}
	fmt.Print(faults.Table(results))
	return nil
}

func workerCmd(args []string) error {
	fs := flag.NewFlagSet("worker", flag.ExitOnError)
	id := fs.String("id", "w", "worker name")
	seed := fs.Int64("seed", 1, "worker index (makes its set elements unique)")
	sentinels := fs.String("sentinels", "", "Sentinel addresses, comma separated")
	seeds := fs.String("seeds", "", "cluster seed addresses, comma separated")
	duration := fs.Duration("duration", 30*time.Second, "workload length")
	setProcs := fs.Int("set-procs", 4, "set workload goroutines")
	regProcs := fs.Int("register-procs", 3, "register workload goroutines")
	interval := fs.Duration("interval", 2*time.Millisecond, "pause between a goroutine's SADDs (4x between register operations)")
	out := fs.String("out", "", "history file (JSON lines)")
	_ = fs.Parse(args)
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	defer f.Close()
	wc := faults.WorkerConfig{
		ClientConfig: faults.ClientConfig{Sentinels: split(*sentinels), Seeds: split(*seeds)},
		ID:           *id, SetProcs: *setProcs, RegisterProcs: *regProcs, Interval: *interval, Duration: *duration,
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	return faults.RunWorker(context.Background(), wc, *seed, f)
}

func checkCmd(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: faults check RUNDIR")
	}
	hists, err := filepath.Glob(filepath.Join(args[0], "history-*.jsonl"))
	if err != nil {
		return err
	}
	ops, err := faults.LoadHistories(hists)
	if err != nil {
		return err
	}
	fmt.Println(faults.Linearizable(ops, time.Minute, filepath.Join(args[0], "register.html")))
	return nil
}
