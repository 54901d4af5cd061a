package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Faults are the fault names a scenario can inject.
var Faults = []string{"kill9", "sigstop", "sigstop-failover", "partition-master", "partition-replica", "crash-in-failover", "partition-sentinels", "partition-master-keep-replica"}

// Timeline of a run, from the workers' start.
const (
	faultAt      = 6 * time.Second  // the fault starts
	faultLength  = 10 * time.Second // partitions last this long
	stopLength   = 5 * time.Second  // SIGSTOP lasts this long (> the 1 s failure timeouts)
	workloadTime = 30 * time.Second // the workers stop
)

// Scenario is one cell of the matrix.
type Scenario struct {
	// Topology is "sentinel" or "cluster"; Fault one of Faults.
	Topology, Fault string
	// Setting is the server configuration.
	Setting Setting
}

// Result is the outcome of one run of a scenario.
type Result struct {
	Topology string `json:"topology"`
	Fault    string `json:"fault"`
	Setting  string `json:"setting"`
	// Replicas is the number of replicas per master.
	Replicas int `json:"replicas"`
	// Set is the set workload's verdict.
	Set SetResult `json:"set"`
	// Linearizable is porcupine's verdict on the register workload.
	Linearizable string `json:"linearizable"`
	// RegisterOps counts the register operations checked.
	RegisterOps int `json:"register_ops"`
	// Notes records what the fault did (which process, when).
	Notes []string `json:"notes,omitempty"`
	// Err is set when the run could not complete.
	Err string `json:"err,omitempty"`
	// Dir is the run's directory (logs and histories).
	Dir string `json:"dir"`
	// Start is when the run started.
	Start time.Time `json:"start"`
	// Seconds is the run's length, setup and checks included.
	Seconds float64 `json:"seconds"`
}

// Run builds the scenario's deployment in fresh namespaces, runs the
// workers, injects the fault, reads the final state and checks the
// history. The namespaces are always removed.
func Run(ctx context.Context, env Env, sc Scenario, run int, log *slog.Logger) Result {
	start := time.Now()
	res := Result{Topology: sc.Topology, Fault: sc.Fault, Setting: sc.Setting.Name, Start: start}
	dir := filepath.Join(env.Dir, fmt.Sprintf("%s-%s-%s-%d-%d", sc.Topology, sc.Fault, sc.Setting.Name, run, start.Unix()))
	res.Dir = dir
	if err := run1(ctx, env, sc, dir, &res, log); err != nil {
		res.Err = err.Error()
	}
	res.Seconds = time.Since(start).Seconds()
	return res
}

func run1(ctx context.Context, env Env, sc Scenario, dir string, res *Result, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("faults: %w", err)
	}
	var d *Deployment
	var err error
	switch sc.Topology {
	case "sentinel":
		res.Replicas = 2
		d, err = NewSentinel(env, sc.Setting, dir, sc.Fault == "partition-sentinels")
	case "cluster":
		res.Replicas = max(1, sc.Setting.ClusterReplicas)
		if sc.Fault == "crash-in-failover" {
			res.Replicas++ // a second replica takes over from the crashed first
		}
		d, err = NewCluster(env, sc.Setting, dir, res.Replicas)
	default:
		return fmt.Errorf("faults: unknown topology %q", sc.Topology)
	}
	if err != nil {
		return err
	}
	defer d.Net.Close()
	defer d.Stop()
	log.Info("deployed", "topology", sc.Topology, "setting", sc.Setting.Name, "master", d.Master, "replicas", d.Replicas)
	cc := d.ClientConfig()
	var workers []*Proc
	var hists []string
	for i, h := range d.Clients {
		hist := filepath.Join(dir, "history-"+h+".jsonl")
		hists = append(hists, hist)
		argv := []string{env.Self, "worker", "-id", h, "-seed", strconv.Itoa(i + 1),
			"-duration", workloadTime.String(), "-out", hist}
		if len(cc.Sentinels) > 0 {
			argv = append(argv, "-sentinels", strings.Join(cc.Sentinels, ","))
		} else {
			argv = append(argv, "-seeds", strings.Join(cc.Seeds, ","))
		}
		p, err := StartProc(h, "worker", filepath.Join(dir, "worker-"+h+".log"), argv...)
		if err != nil {
			return err
		}
		workers = append(workers, p)
	}
	t0 := time.Now()
	defer func() {
		for _, w := range workers {
			if !w.Exited() {
				_ = w.Kill9()
			}
		}
	}()
	sleepUntil(t0.Add(faultAt))
	if err := d.checkMaster(ctx); err != nil {
		return err
	}
	faultStart := time.Now()
	notes, ferr := inject(ctx, d, sc.Fault, faultStart)
	res.Notes = notes
	if ferr != nil {
		return ferr
	}
	for _, w := range workers {
		if err := w.Wait(workloadTime + 30*time.Second - time.Since(t0)); err != nil {
			return err
		}
		if err := w.ExitErr(); err != nil {
			return fmt.Errorf("%w (see %s)", err, dir)
		}
	}
	end := t0.Add(workloadTime).UnixNano()
	time.Sleep(time.Second)
	final, err := ReadFinal(ctx, cc, 20*time.Second)
	if err != nil {
		return err
	}
	if b, err := json.Marshal(final); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "final.json"), b, 0o644)
	}
	ops, err := LoadHistories(hists)
	if err != nil {
		return err
	}
	res.Set = CheckSet(ops, final, faultStart.UnixNano(), end)
	res.RegisterOps = len(RegisterOps(ops))
	res.Linearizable = Linearizable(ops, 20*time.Second, filepath.Join(dir, "register.html"))
	return nil
}

// LoadHistories reads and merges history files.
func LoadHistories(paths []string) ([]Op, error) {
	var all [][]Op
	for _, h := range paths {
		f, err := os.Open(h)
		if err != nil {
			return nil, fmt.Errorf("faults: %w", err)
		}
		ops, err := ReadHistory(f)
		f.Close()
		if err != nil {
			return nil, err
		}
		all = append(all, ops)
	}
	return Merge(all...), nil
}

func sleepUntil(t time.Time) {
	if d := time.Until(t); d > 0 {
		time.Sleep(d)
	}
}

// inject performs the fault and returns what it did.
func inject(ctx context.Context, d *Deployment, fault string, start time.Time) ([]string, error) {
	note := func(format string, a ...interface{}) string {
		return fmt.Sprintf("%.2fs ", time.Since(start).Seconds()) + fmt.Sprintf(format, a...)
	}
	var notes []string
	master := d.Servers[d.Master]
	switch fault {
	case "kill9":
		if err := master.Kill9(); err != nil {
			return notes, err
		}
		notes = append(notes, note("kill -9 master %s", d.Master))
	case "sigstop":
		if err := master.Signal(syscall.SIGSTOP); err != nil {
			return notes, err
		}
		notes = append(notes, note("SIGSTOP master %s", d.Master))
		time.Sleep(stopLength)
		if err := master.Signal(syscall.SIGCONT); err != nil {
			return notes, err
		}
		notes = append(notes, note("SIGCONT master %s", d.Master))
	case "sigstop-failover":
		// The master stopped until its failover is under way (a Sentinel
		// shows failover_in_progress, or in the cluster a replica has
		// won the election), then continued: it serves again while the
		// failover runs, and is demoted only afterwards.
		if err := master.Signal(syscall.SIGSTOP); err != nil {
			return notes, err
		}
		notes = append(notes, note("SIGSTOP master %s", d.Master))
		p, werr := d.failoverVictim(ctx, 15*time.Second)
		if err := master.Signal(syscall.SIGCONT); err != nil {
			return notes, err
		}
		if werr != nil {
			notes = append(notes, note("SIGCONT master %s (%v)", d.Master, werr))
		} else {
			notes = append(notes, note("SIGCONT master %s: failover under way (%s on %s)", d.Master, p.Name, p.Host))
		}
	case "partition-master", "partition-replica":
		group := []string{d.Master, d.Clients[0]}
		if fault == "partition-replica" {
			group = []string{d.Replicas[0]}
		}
		if err := d.Net.Partition(group); err != nil {
			return notes, err
		}
		notes = append(notes, note("partition %v | rest", group))
		time.Sleep(faultLength)
		if err := d.Net.Heal(); err != nil {
			return notes, err
		}
		notes = append(notes, note("healed"))
	case "partition-sentinels":
		// The Sentinels (on hosts of their own) cut from the master,
		// which keeps its replicas and clients: the partial partition of
		// docs/ARCHITECTURE.md, "Acknowledged writes".
		if d.Topology != "sentinel" {
			return nil, fmt.Errorf("faults: %s needs the sentinel topology", fault)
		}
		if err := d.Net.Cut([]string{d.Master}, d.sentinelHosts); err != nil {
			return notes, err
		}
		notes = append(notes, note("cut %s | %v", d.Master, d.sentinelHosts))
		time.Sleep(faultLength)
		if err := d.Net.Heal(); err != nil {
			return notes, err
		}
		notes = append(notes, note("healed"))
	case "partition-master-keep-replica":
		// The cluster's partial partition: the master keeps one of its
		// replicas and client host c1 but is cut from the other masters
		// and from its other replicas (the cluster fence's case,
		// docs/ARCHITECTURE.md, "Acknowledged writes").
		if d.Topology != "cluster" || len(d.Replicas) < 2 {
			return nil, fmt.Errorf("faults: %s needs the cluster topology with 2 replicas or more", fault)
		}
		group := []string{d.Master, d.Replicas[0], d.Clients[0]}
		if err := d.Net.Partition(group); err != nil {
			return notes, err
		}
		notes = append(notes, note("partition %v | rest (replicas %v)", group, d.Replicas[1:]))
		time.Sleep(faultLength)
		if err := d.Net.Heal(); err != nil {
			return notes, err
		}
		notes = append(notes, note("healed"))
	case "crash-in-failover":
		if err := master.Kill9(); err != nil {
			return notes, err
		}
		notes = append(notes, note("kill -9 master %s", d.Master))
		victim, err := d.failoverVictim(ctx, 15*time.Second)
		if err != nil {
			return notes, err
		}
		if err := victim.Kill9(); err != nil {
			return notes, err
		}
		notes = append(notes, note("kill -9 %s on %s during the failover", victim.Name, victim.Host))
	default:
		return nil, fmt.Errorf("faults: unknown fault %q", fault)
	}
	return notes, nil
}

// errSpurious marks a run whose target master was replaced before the
// fault (a failure detector fooled by a loaded machine): its fault would hit
// the wrong node, so the run is reported as failed.
const errSpurious = "spurious failover before the fault"

// checkMaster verifies, just before the fault, that the target is still
// the master: its own role, and in the Sentinel deployment every
// Sentinel's answer.
func (d *Deployment) checkMaster(ctx context.Context) error {
	f, err := info(ctx, d.addr(d.Master), "replication")
	if err != nil {
		return fmt.Errorf("faults: %s before the fault: %w", errSpurious, err)
	}
	if f["role"] != "master" {
		return fmt.Errorf("faults: %s: %s is a %s", errSpurious, d.Master, f["role"])
	}
	for _, a := range d.sentinelAddrs() {
		c := admin(a)
		m, err := c.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MasterName).StringSlice()
		c.Close()
		if err != nil {
			return fmt.Errorf("faults: %s: sentinel %s: %w", errSpurious, a, err)
		}
		if len(m) != 2 || m[0] != d.Net.IPs[d.Master] {
			return fmt.Errorf("faults: %s: sentinel %s says the master is %v", errSpurious, a, m)
		}
	}
	return nil
}

// failoverVictim waits for the failover of the killed master to be under
// way and returns the process to crash: the Sentinel leading it
// (failover_in_progress in its SENTINEL MASTER flags), or in a cluster the
// replica that just won the election (a master serving the target's
// slot), whose own replica must then take over.
func (d *Deployment) failoverVictim(ctx context.Context, limit time.Duration) (*Proc, error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if d.Topology == "sentinel" {
			for _, h := range d.Net.Hosts {
				p := d.Sentinels[h]
				if p == nil {
					continue
				}
				c := admin(d.Net.IPs[h] + ":" + strconv.Itoa(sentinelPort))
				m, err := c.Do(ctx, "SENTINEL", "MASTER", MasterName).Result()
				c.Close()
				if err == nil && strings.Contains(fieldMap(m)["flags"], "failover_in_progress") {
					return p, nil
				}
			}
		} else {
			for _, h := range d.Replicas {
				f, err := info(ctx, d.addr(h), "replication")
				if err == nil && f["role"] == "master" {
					return d.Servers[h], nil
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, fmt.Errorf("faults: no failover under way after %s", limit)
}
