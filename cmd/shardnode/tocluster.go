package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"

	"github.com/shardis/shardis/internal/deploy"
	"github.com/shardis/shardis/internal/tocluster"
)

func init() {
	extraCommands = append(extraCommands, &cli.Command{
		Name:  "migrate-to-cluster",
		Usage: "move a pre-sharded Sentinel deployment into a Redis Cluster online (copy, live stream, cut-over)",
		UsageText: "shardnode migrate-to-cluster --sentinels host:port,... --masters shard-1,... --to host:port\n" +
			"                             [--no-cutover | --cutover-only] [--cutover-timeout 5s] [--json]\n\n" +
			"For every source shard the tool replicates from the shard's master (PSYNC, announcing\n" +
			"replica-priority 0, so no Sentinel promotes it), copies its snapshot into the cluster\n" +
			"(RESTORE per key to the master owning its slot, pipelined) and applies the live write\n" +
			"stream by slot. When every shard's lag is small it cuts over: writes paused on the\n" +
			"sources (CLIENT PAUSE WRITE, at most --cutover-timeout), the cluster brought level, the\n" +
			"sources fenced (every write refused with NOREPLICAS), the commit key set on the cluster,\n" +
			"then the sources unpaused. ShardedSentinelPool clients move to the cluster on their own.\n" +
			"A failure before the commit leaves the sources serving as before.\n\n" +
			"--no-cutover keeps streaming until a later \"migrate-to-cluster --cutover-only\" (same\n" +
			"flags) asks for the cut-over; --cutover-only also finishes a cut-over whose tool was\n" +
			"killed (fences after a commit, lifts them without one).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "sentinels", Usage: "source Sentinels `host:port,...`", Required: true},
			&cli.StringFlag{Name: "masters", Usage: "source shards' master `names` (comma-separated)", Required: true},
			&cli.StringFlag{Name: "to", Usage: "any node `host:port` of the target cluster", Required: true},
			&cli.StringFlag{Name: "user", Usage: "username for the source and cluster nodes"},
			&cli.StringFlag{Name: "password", Usage: "password for the source and cluster nodes"},
			&cli.StringFlag{Name: "sentinel-password", Usage: "password for the Sentinels"},
			&cli.BoolFlag{Name: "no-cutover", Usage: "copy and stream, cut over only when --cutover-only asks"},
			&cli.BoolFlag{Name: "cutover-only", Usage: "ask a --no-cutover run to cut over, or finish an interrupted cut-over"},
			&cli.DurationFlag{Name: "cutover-timeout", Value: tocluster.DefaultCutoverTimeout, Usage: "longest write pause on the sources"},
			&cli.Int64Flag{Name: "cutover-lag", Value: tocluster.DefaultCutoverLag, Usage: "cut over once every shard's lag is below `bytes`"},
			&cli.DurationFlag{Name: "wait", Value: 2 * time.Minute, Usage: "with --cutover-only: longest wait for the commit"},
			&cli.BoolFlag{Name: "force", Usage: "delete keys the target cluster holds from no earlier attempt"},
			&cli.BoolFlag{Name: "json", Usage: "print progress and the result as JSON lines"},
			&cli.StringFlag{Name: "id", Usage: "migration id (default: random)"},
		},
		Action: runToCluster,
	})
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func runToCluster(c *cli.Context) error {
	redis.SetLogger(quietRedisLog{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	asJSON := c.Bool("json")
	opt := tocluster.Options{
		Sentinels: splitList(c.String("sentinels")), Masters: splitList(c.String("masters")), To: c.String("to"),
		Username: c.String("user"), Password: c.String("password"), SentinelPassword: c.String("sentinel-password"),
		NoCutover: c.Bool("no-cutover"), CutoverTimeout: c.Duration("cutover-timeout"), CutoverLag: c.Int64("cutover-lag"),
		Force: c.Bool("force"), ID: c.String("id"),
		Logger: slog.New(lineHandler{os.Stderr}),
	}
	enc := json.NewEncoder(os.Stdout)
	if c.Bool("cutover-only") {
		msg, err := tocluster.FinishCutover(ctx, opt, c.Duration("wait"))
		if asJSON {
			out := map[string]any{"ok": err == nil, "result": msg}
			if err != nil {
				out["error"] = err.Error()
			}
			_ = enc.Encode(out)
		} else if err == nil {
			fmt.Println(msg)
		}
		if err != nil {
			return cli.Exit("shardnode migrate-to-cluster: "+err.Error(), 1)
		}
		return nil
	}
	var bar *progressbar.ProgressBar
	if asJSON {
		opt.OnProgress = func(p tocluster.Progress) { _ = enc.Encode(map[string]any{"progress": p}) }
	} else {
		opt.Logger = slog.New(slog.DiscardHandler) // log lines would break the bar
		opt.OnProgress = func(p tocluster.Progress) {
			var done, total int64
			var desc []string
			for _, s := range p.Shards {
				done += s.Keys
				total += s.TotalKeys
				lag := "-"
				if s.Lag >= 0 {
					lag = deploy.HumanBytes(s.Lag)
				}
				desc = append(desc, fmt.Sprintf("%s %s %s lag %s", s.Name, s.Phase, deploy.HumanBytes(s.Bytes), lag))
			}
			if bar == nil {
				bar = progressbar.NewOptions64(max(total, 1), progressbar.OptionSetWriter(os.Stderr),
					progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("keys"),
					progressbar.OptionThrottle(200*time.Millisecond))
			}
			bar.Describe(p.Phase + ": " + strings.Join(desc, " | "))
			_ = bar.Set64(min(done, max(total, 1)))
		}
	}
	res, err := tocluster.Run(ctx, opt)
	if bar != nil {
		_ = bar.Finish()
		fmt.Fprintln(os.Stderr)
	}
	if asJSON {
		out := map[string]any{"ok": err == nil}
		if res != nil {
			out["result"] = res
		}
		if err != nil {
			out["error"] = err.Error()
		}
		_ = enc.Encode(out)
	} else if res != nil {
		fmt.Printf("migration %s committed: %d keys copied at %.0f keys/s (all streaming after %v), writes paused %v\n",
			res.ID, res.Keys, res.CopyRate, res.CopyTime.Round(time.Millisecond), res.PauseTime.Round(time.Microsecond))
		for _, s := range res.Shards {
			fmt.Printf("  %-12s %-22s keys %-8d commands %-8d resyncs %d partial / %d full\n",
				s.Name, s.Master, s.Keys, s.Commands, s.PartialResyncs, s.FullResyncs)
		}
		fmt.Println("sources fenced (writes refused with NOREPLICAS); clients following the notice use the cluster")
	}
	if err != nil {
		return cli.Exit("shardnode migrate-to-cluster: "+err.Error(), 1)
	}
	return nil
}
