package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
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
			"killed (fences after a commit, lifts them without one).\n\n" +
			"The cut-over runs under a guardian: a process of its own (this command with --guardian)\n" +
			"that the tool starts before it touches the sources and that outlives it. If the tool\n" +
			"dies (even SIGKILL) before its cut-over ended, the guardian settles it: after the commit\n" +
			"point it finishes the fences, before it the cut-over is aborted for good and the\n" +
			"sources serve again. A rerun of the same command settles the same way first.\n\n" +
			"--pause-at copy|paused|fenced|committed stops at that point, logs \"tocluster: paused at\n" +
			"<point>\" and waits for SIGUSR1 (fault tests: kill the tool there).",
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
			&cli.StringFlag{Name: "pause-at", Usage: "stop at `point` (copy, paused, fenced, committed) until SIGUSR1"},
			&cli.BoolFlag{Name: "guardian", Usage: "internal: the cut-over's guardian (started by the tool itself; reads its state on stdin)"},
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
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	}
	enc := json.NewEncoder(os.Stdout)
	if c.Bool("guardian") {
		return runGuardian(opt)
	}
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
	opt.PauseAt = c.String("pause-at")
	resume := make(chan struct{})
	opt.Resume = resume
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	go func() {
		if _, ok := <-usr1; ok {
			close(resume)
		}
	}()
	opt.Guard = func(id string) (func(bool), error) { return startGuardian(c, opt, id) }
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
	} else if res != nil && res.AlreadyCommitted {
		fmt.Printf("migration %s was already committed; its fences are finished (sources refuse writes with NOREPLICAS)\n", res.ID)
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

// guardianAuth is the first line the tool writes to its guardian's stdin:
// the credentials, kept off the command line.
type guardianAuth struct {
	User             string `json:"user,omitempty"`
	Password         string `json:"password,omitempty"`
	SentinelPassword string `json:"sentinel_password,omitempty"`
}

// startGuardian starts "migrate-to-cluster --guardian" for the cut-over
// of migration id: its own process group (a Ctrl-C to the tool's does not
// reach it), stdin a pipe whose end tells it the tool's fate (see
// tocluster.Watch), stderr the tool's. The returned function tells it
// that the cut-over ended ("done") or needs its repair ("recover").
func startGuardian(c *cli.Context, opt tocluster.Options, id string) (func(bool), error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "migrate-to-cluster", "--guardian", "--id", id,
		"--sentinels", strings.Join(opt.Sentinels, ","), "--masters", strings.Join(opt.Masters, ","), "--to", opt.To,
		"--cutover-timeout", opt.CutoverTimeout.String())
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	auth, _ := json.Marshal(guardianAuth{User: opt.Username, Password: opt.Password, SentinelPassword: opt.SentinelPassword})
	if _, err := in.Write(append(auth, '\n')); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	go func() { _ = cmd.Wait() }() // reaped if it ends while the tool lives
	var once sync.Once
	return func(repair bool) {
		once.Do(func() {
			msg := "done\n"
			if repair {
				msg = "recover\n"
			}
			_, _ = in.Write([]byte(msg))
			_ = in.Close()
		})
	}, nil
}

// runGuardian is --guardian: read the credentials, then watch the tool's
// cut-over (tocluster.Watch) and settle it if the tool dies.
func runGuardian(opt tocluster.Options) error {
	signal.Ignore(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	br := bufio.NewReader(os.Stdin)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return cli.Exit("shardnode migrate-to-cluster --guardian: no credentials on stdin", 1)
	}
	var a guardianAuth
	if err := json.Unmarshal(line, &a); err != nil {
		return cli.Exit("shardnode migrate-to-cluster --guardian: "+err.Error(), 1)
	}
	opt.Username, opt.Password, opt.SentinelPassword = a.User, a.Password, a.SentinelPassword
	opt.Logger = opt.Logger.With("guardian", os.Getpid())
	opt.Logger.Debug("tocluster: guardian: watching the cut-over", "id", opt.ID) // quiet: the tool's progress bar shares stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*opt.CutoverTimeout+time.Minute)
	defer cancel()
	msg, err := tocluster.Watch(ctx, opt, br)
	if err != nil {
		opt.Logger.Error("tocluster: guardian: cannot settle the cut-over; run migrate-to-cluster --cutover-only", "id", opt.ID, "err", err)
		return cli.Exit("shardnode migrate-to-cluster --guardian: "+err.Error(), 1)
	}
	opt.Logger.Info("tocluster: guardian finished: "+msg, "id", opt.ID)
	return nil
}
