package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"

	"github.com/shardis/shardis/client/cluster/admin"
)

// The "shardnode cluster <verb>" commands: a thin layer over
// client/cluster/admin, with redis-cli --cluster's verbs and messages.

// clusterBoolFlags are the verbs' flags that take no value.
var clusterBoolFlags = map[string]bool{"json": true, "no-progress": true, "yes": true, "replace": true,
	"use-empty-masters": true, "simulate": true, "replica": true, "force": true, "takeover": true, "help": true, "h": true}

// flagsFirst moves a verb's flags before its positional arguments, so
// that "create A B C --replicas 1" parses as redis-cli's does (urfave/cli
// v2 stops parsing flags at the first positional argument).
func flagsFirst(args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if !strings.Contains(name, "=") && !clusterBoolFlags[name] && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	return append(flags, pos...)
}

func init() {
	if len(os.Args) > 3 && os.Args[1] == "cluster" {
		os.Args = append(os.Args[:3:3], flagsFirst(os.Args[3:])...)
	}
	common := func(extra ...cli.Flag) []cli.Flag {
		return append([]cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON on stdout"},
			&cli.StringFlag{Name: "user", Usage: "ACL `username` for every node"},
			&cli.StringFlag{Name: "pass", Usage: "`password` for every node (or REDISCLI_AUTH)", EnvVars: []string{"REDISCLI_AUTH"}},
			&cli.DurationFlag{Name: "timeout", Value: 60 * time.Second, Usage: "bound on each request (MIGRATE included)"},
			&cli.BoolFlag{Name: "no-progress", Usage: "no progress bar"},
		}, extra...)
	}
	yes := &cli.BoolFlag{Name: "yes", Usage: "do not ask for confirmation"}
	moveFlags := []cli.Flag{
		&cli.IntFlag{Name: "pipeline", Value: 10, Usage: "keys per MIGRATE"},
		&cli.BoolFlag{Name: "replace", Usage: "replace keys that exist on the target (MIGRATE REPLACE)"},
		&cli.BoolFlag{Name: "key-by-key", Usage: "move keys with MIGRATE even where both masters have whole-slot migration (CLUSTER MIGRATION)"},
	}
	extraCommands = append(extraCommands, &cli.Command{
		Name:  "cluster",
		Usage: "create, check and reshape a Redis Cluster (redis-cli --cluster's verbs)",
		UsageText: "shardnode cluster <verb> [flags] HOST:PORT ...\n\n" +
			"Works with redis-server clusters and shardnode clusters alike. Exit status 0 only on success.",
		Subcommands: []*cli.Command{
			{
				Name: "create", Usage: "build a cluster from empty nodes",
				ArgsUsage: "HOST:PORT HOST:PORT ...",
				Flags:     common(&cli.IntFlag{Name: "replicas", Usage: "replicas per master"}, yes),
				Action:    clusterCreate,
			},
			{Name: "check", Usage: "check agreement, open slots and slot coverage", ArgsUsage: "HOST:PORT", Flags: common(), Action: clusterCheck},
			{Name: "fix", Usage: "repair open and uncovered slots", ArgsUsage: "HOST:PORT", Flags: common(moveFlags...), Action: clusterFix},
			{
				Name: "reshard", Usage: "move slots (with their keys) to a master", ArgsUsage: "HOST:PORT",
				Flags: common(append(moveFlags,
					&cli.StringFlag{Name: "from", Required: true, Usage: "source master `ID`s, comma separated, or \"all\""},
					&cli.StringFlag{Name: "to", Required: true, Usage: "target master `ID`"},
					&cli.IntFlag{Name: "slots", Required: true, Usage: "number of slots to move"},
					yes)...),
				Action: clusterReshard,
			},
			{
				Name: "rebalance", Usage: "spread slots over the masters by weight", ArgsUsage: "HOST:PORT",
				Flags: common(append(moveFlags,
					&cli.BoolFlag{Name: "use-empty-masters", Usage: "give slots to masters that have none"},
					&cli.StringSliceFlag{Name: "weight", Usage: "`ID=W` weight of a master (repeatable)"},
					&cli.Float64Flag{Name: "threshold", Value: 2, Usage: "percent off its share before a master is rebalanced"},
					&cli.BoolFlag{Name: "simulate", Usage: "show how many slots would move, move none"})...),
				Action: clusterRebalance,
			},
			{
				Name: "add-node", Usage: "join an empty node to the cluster", ArgsUsage: "NEW_HOST:PORT EXISTING_HOST:PORT",
				Flags: common(&cli.StringFlag{Name: "replica-of", Usage: "make it a replica of master `ID`"},
					&cli.BoolFlag{Name: "replica", Usage: "make it a replica of the master with the fewest replicas"}),
				Action: clusterAddNode,
			},
			{Name: "del-node", Usage: "remove an empty node from the cluster", ArgsUsage: "HOST:PORT ID", Flags: common(), Action: clusterDelNode},
			{
				Name: "failover", Usage: "promote the replica at HOST:PORT (CLUSTER FAILOVER) and wait for the role swap", ArgsUsage: "HOST:PORT",
				Flags: common(&cli.BoolFlag{Name: "force", Usage: "CLUSTER FAILOVER FORCE (master down)"},
					&cli.BoolFlag{Name: "takeover", Usage: "CLUSTER FAILOVER TAKEOVER (no election)"}),
				Action: clusterFailover,
			},
			{Name: "info", Usage: "keys, slots and replicas per master", ArgsUsage: "HOST:PORT", Flags: common(), Action: clusterInfo},
		},
	})
}

// lineHandler prints log records' messages alone, one per line, as
// redis-cli prints its steps.
type lineHandler struct{ w io.Writer }

func (h lineHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h lineHandler) Handle(_ context.Context, r slog.Record) error {
	_, err := fmt.Fprintln(h.w, r.Message)
	return err
}
func (h lineHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h lineHandler) WithGroup(string) slog.Handler      { return h }

// clusterRun holds what every verb needs.
type clusterRun struct {
	c   *cli.Context
	ctx context.Context
	opt *admin.Options
	bar *progressbar.ProgressBar
}

func newClusterRun(c *cli.Context, nargs int) (*clusterRun, context.CancelFunc, error) {
	redis.SetLogger(quietRedisLog{})
	if nargs >= 0 && c.NArg() != nargs {
		return nil, nil, cli.Exit(fmt.Sprintf("shardnode cluster %s: want %d argument(s): %s", c.Command.Name, nargs, c.Command.ArgsUsage), 2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	r := &clusterRun{c: c, ctx: ctx}
	r.opt = &admin.Options{
		Username: c.String("user"), Password: c.String("pass"), Timeout: c.Duration("timeout"),
		Logger: slog.New(lineHandler{os.Stderr}),
	}
	if c.IsSet("pipeline") {
		r.opt.Pipeline = c.Int("pipeline")
	}
	r.opt.Replace = c.Bool("replace")
	if c.Bool("key-by-key") {
		r.opt.Mover = admin.KeyMover{}
	}
	if !c.Bool("no-progress") && !c.Bool("json") {
		r.opt.Progress = func(p admin.Progress) {
			if r.bar == nil {
				r.bar = progressbar.NewOptions(p.Total, progressbar.OptionSetWriter(os.Stderr),
					progressbar.OptionSetDescription(p.Op), progressbar.OptionShowCount(),
					progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
			}
			_ = r.bar.Set(p.Done)
		}
		// Step lines would break the bar; they are for --json runs and logs.
		r.opt.Logger = slog.New(slog.DiscardHandler)
	}
	return r, stop, nil
}

// onOK returns text when err is nil, nil otherwise: an [OK] line is
// printed only for a command that succeeded.
func onOK(err error, text func(io.Writer)) func(io.Writer) {
	if err != nil {
		return nil
	}
	return text
}

// finish prints v (as JSON with --json, else with text) and turns err
// into the exit status.
func (r *clusterRun) finish(v any, text func(io.Writer), err error) error {
	if r.bar != nil {
		_ = r.bar.Finish()
	}
	if r.c.Bool("json") {
		out := map[string]any{"ok": err == nil}
		if rv := reflect.ValueOf(v); v != nil && !(rv.Kind() == reflect.Pointer && rv.IsNil()) {
			out["result"] = v
		}
		if err != nil {
			out["error"] = err.Error()
		}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(out)
	} else if text != nil && v != nil {
		text(os.Stdout)
	}
	if err != nil {
		return cli.Exit("shardnode cluster "+r.c.Command.Name+": "+err.Error(), 1)
	}
	return nil
}

// confirm asks question on stderr unless --yes; only "yes" proceeds.
func (r *clusterRun) confirm(question string) bool {
	if r.c.Bool("yes") {
		return true
	}
	fmt.Fprintf(os.Stderr, "%s (type 'yes' to accept): ", question)
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	return strings.TrimSpace(line) == "yes"
}

func clusterCreate(c *cli.Context) error {
	r, stop, err := newClusterRun(c, -1)
	if err != nil {
		return err
	}
	defer stop()
	if c.NArg() == 0 {
		return cli.Exit("shardnode cluster create: give the nodes' HOST:PORT addresses", 2)
	}
	plan, err := admin.PlanCreate(r.ctx, c.Args().Slice(), c.Int("replicas"), r.opt)
	if err != nil {
		return r.finish(nil, nil, err)
	}
	printPlan := func(w io.Writer) {
		for i, m := range plan.Masters {
			fmt.Fprintf(w, "Master[%d] %s -> Slots %d - %d\n", i, m.Addr, m.First, m.Last)
			for _, rep := range m.Replicas {
				fmt.Fprintf(w, "  Replica %s\n", rep)
			}
		}
	}
	if !c.Bool("json") {
		printPlan(os.Stderr)
	}
	if !r.confirm("Can I set the above configuration?") {
		return r.finish(plan, nil, fmt.Errorf("not confirmed"))
	}
	err = admin.Create(r.ctx, plan, r.opt)
	return r.finish(plan, onOK(err, func(w io.Writer) { fmt.Fprintln(w, "[OK] All 16384 slots covered.") }), err)
}

func printReport(w io.Writer, rep *admin.Report) {
	for _, f := range rep.Fixed {
		fmt.Fprintln(w, ">>> "+f)
	}
	for _, m := range rep.Messages {
		fmt.Fprintln(w, m)
	}
	for _, u := range rep.Unreachable {
		fmt.Fprintf(w, "[WARNING] Node %s is unreachable.\n", u)
	}
}

func reportErr(rep *admin.Report, err error) error {
	if err == nil && rep != nil && !rep.OK {
		return fmt.Errorf("the cluster has problems")
	}
	return err
}

func clusterCheck(c *cli.Context) error {
	r, stop, err := newClusterRun(c, 1)
	if err != nil {
		return err
	}
	defer stop()
	rep, err := admin.Check(r.ctx, c.Args().First(), r.opt)
	return r.finish(rep, func(w io.Writer) { printReport(w, rep) }, reportErr(rep, err))
}

func clusterFix(c *cli.Context) error {
	r, stop, err := newClusterRun(c, 1)
	if err != nil {
		return err
	}
	defer stop()
	rep, err := admin.Fix(r.ctx, c.Args().First(), r.opt)
	return r.finish(rep, func(w io.Writer) { printReport(w, rep) }, reportErr(rep, err))
}

func clusterReshard(c *cli.Context) error {
	r, stop, err := newClusterRun(c, 1)
	if err != nil {
		return err
	}
	defer stop()
	ro := admin.ReshardOptions{From: strings.Split(c.String("from"), ","), To: c.String("to"), Slots: c.Int("slots")}
	if !r.confirm(fmt.Sprintf("Move %d slots from %s to %s?", ro.Slots, c.String("from"), ro.To)) {
		return r.finish(nil, nil, fmt.Errorf("not confirmed"))
	}
	err = admin.Reshard(r.ctx, c.Args().First(), ro, r.opt)
	return r.finish(map[string]int{"moved": ro.Slots}, func(w io.Writer) { fmt.Fprintf(w, "Moved %d slots.\n", ro.Slots) }, err)
}

func clusterRebalance(c *cli.Context) error {
	r, stop, err := newClusterRun(c, 1)
	if err != nil {
		return err
	}
	defer stop()
	ro := admin.RebalanceOptions{UseEmptyMasters: c.Bool("use-empty-masters"), Threshold: c.Float64("threshold"),
		Simulate: c.Bool("simulate"), Weights: map[string]float64{}}
	for _, w := range c.StringSlice("weight") {
		id, v, ok := strings.Cut(w, "=")
		f, perr := strconv.ParseFloat(v, 64)
		if !ok || perr != nil || f < 0 {
			return cli.Exit(fmt.Sprintf("shardnode cluster rebalance: bad --weight %q (want ID=W)", w), 2)
		}
		ro.Weights[id] = f
	}
	moved, err := admin.Rebalance(r.ctx, c.Args().First(), ro, r.opt)
	return r.finish(map[string]int{"moved": moved}, func(w io.Writer) {
		if moved == 0 {
			fmt.Fprintln(w, "*** No rebalancing needed! All nodes are within the threshold.")
		} else {
			fmt.Fprintf(w, "Moved %d slots.\n", moved)
		}
	}, err)
}

func clusterAddNode(c *cli.Context) error {
	r, stop, err := newClusterRun(c, 2)
	if err != nil {
		return err
	}
	defer stop()
	ao := admin.AddNodeOptions{Replica: c.Bool("replica"), ReplicaOf: c.String("replica-of")}
	err = admin.AddNode(r.ctx, c.Args().Get(0), c.Args().Get(1), ao, r.opt)
	return r.finish(map[string]string{"added": c.Args().Get(0)}, onOK(err, func(w io.Writer) { fmt.Fprintln(w, "[OK] New node added correctly.") }), err)
}

func clusterDelNode(c *cli.Context) error {
	r, stop, err := newClusterRun(c, 2)
	if err != nil {
		return err
	}
	defer stop()
	err = admin.DelNode(r.ctx, c.Args().Get(0), c.Args().Get(1), r.opt)
	return r.finish(map[string]string{"removed": c.Args().Get(1)}, onOK(err, func(w io.Writer) { fmt.Fprintln(w, "[OK] Node removed.") }), err)
}

func clusterFailover(c *cli.Context) error {
	r, stop, err := newClusterRun(c, 1)
	if err != nil {
		return err
	}
	defer stop()
	mode := admin.FailoverDefault
	switch {
	case c.Bool("force") && c.Bool("takeover"):
		return cli.Exit("shardnode cluster failover: --force and --takeover are exclusive", 2)
	case c.Bool("force"):
		mode = admin.FailoverForce
	case c.Bool("takeover"):
		mode = admin.FailoverTakeover
	}
	err = admin.Failover(r.ctx, c.Args().First(), mode, r.opt)
	return r.finish(map[string]string{"master": c.Args().First()}, onOK(err, func(w io.Writer) {
		fmt.Fprintf(w, "[OK] %s is now a master.\n", c.Args().First())
	}), err)
}

func clusterInfo(c *cli.Context) error {
	r, stop, err := newClusterRun(c, 1)
	if err != nil {
		return err
	}
	defer stop()
	info, err := admin.Info(r.ctx, c.Args().First(), r.opt)
	return r.finish(info, func(w io.Writer) {
		for _, m := range info.Masters {
			fmt.Fprintf(w, "%s (%s...) -> %d keys | %d slots | %d slaves.\n", m.Addr, m.ID[:8], m.Keys, m.Slots, m.Replicas)
		}
		fmt.Fprintf(w, "[OK] %d keys in %d masters.\n", info.Keys, len(info.Masters))
	}, err)
}
