package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"

	"github.com/shardis/shardis/internal/deploy"
)

func init() {
	extraCommands = append(extraCommands, &cli.Command{
		Name:  "status",
		Usage: "show a deployment: masters, replicas, lag, agreement, failovers (Sentinel shards or a cluster)",
		UsageText: "shardnode status [--sentinel host:port | --node host:port | --dir ./shardis-data] [--json] [--watch]\n\n" +
			"One line per replica in 80 columns: the shard, its master and state as the Sentinel\n" +
			"sees it, each replica's link (up, sync, down) and lag (bytes behind, seconds since\n" +
			"its last ack), how many Sentinels agree on the master address, and the last failover\n" +
			"(time since the +switch-master seen while watching, else the master's config epoch).\n" +
			"--json prints the same data for scripts (one object per refresh with --watch).\n\n" +
			"On a cluster deployment (--dir's deploy.json says mode \"cluster\", or --node is given):\n" +
			"per master its address, node id, config epoch, the cluster_state it reports and its\n" +
			"slots; per replica its link (up, sync, down) and lag; how many nodes hold the same\n" +
			"slot map; and the last failover (dated when seen changing while watching).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "sentinel", Usage: "Sentinel `host:port`[,host:port...]: the first that answers is asked (default: --dir's Sentinels, else 127.0.0.1:26379)"},
			&cli.StringFlag{Name: "dir", Value: "./shardis-data", Usage: "a \"shardnode up\" data `directory`, to find a Sentinel"},
			&cli.StringFlag{Name: "node", Usage: "cluster node `host:port`[,host:port...]: show that cluster (default: --dir's nodes when it holds a cluster)"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
			&cli.BoolFlag{Name: "watch", Usage: "refresh until interrupted"},
			&cli.DurationFlag{Name: "interval", Value: time.Second, Usage: "refresh interval with --watch"},
		},
		Action: runStatus,
	})
}

func runStatus(c *cli.Context) error {
	redis.SetLogger(quietRedisLog{})
	if c.String("node") != "" && c.String("sentinel") == "" {
		return runClusterStatus(c, deploy.NewClusterCollector(strings.Split(c.String("node"), ",")...))
	}
	if l, err := deploy.LoadLayout(c.String("dir")); err == nil && l.Mode == deploy.ModeCluster && c.String("sentinel") == "" {
		return runClusterStatus(c, deploy.NewLayoutCollector(l))
	}
	addrs := strings.Split(c.String("sentinel"), ",")
	if c.String("sentinel") == "" {
		addrs = []string{"127.0.0.1:26379"}
		if l, err := deploy.LoadLayout(c.String("dir")); err == nil {
			addrs = l.SentinelAddrs()
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	col := deploy.NewCollector(addrs...)
	defer col.Close()
	show := func() error {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		st, err := col.Collect(cctx)
		if err != nil {
			return err
		}
		switch {
		case c.Bool("json") && c.Bool("watch"):
			return json.NewEncoder(os.Stdout).Encode(st)
		case c.Bool("json"):
			return deploy.WriteJSON(os.Stdout, st)
		case c.Bool("watch"):
			fmt.Print("\x1b[H\x1b[2J")
		}
		return deploy.WriteTable(os.Stdout, st)
	}
	if !c.Bool("watch") {
		return show()
	}
	go col.Watch(ctx, nil)
	return watchLoop(ctx, c, show)
}

// runClusterStatus is "status" for a cluster: the same --json and --watch
// behaviour as for Sentinel deployments.
func runClusterStatus(c *cli.Context, col *deploy.ClusterCollector) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer col.Close()
	show := func() error {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		st, err := col.Collect(cctx)
		if err != nil {
			return err
		}
		switch {
		case c.Bool("json") && c.Bool("watch"):
			return json.NewEncoder(os.Stdout).Encode(st)
		case c.Bool("json"):
			return deploy.WriteClusterJSON(os.Stdout, st)
		case c.Bool("watch"):
			fmt.Print("\x1b[H\x1b[2J")
		}
		return deploy.WriteClusterTable(os.Stdout, st)
	}
	if !c.Bool("watch") {
		return show()
	}
	return watchLoop(ctx, c, show)
}

// watchLoop shows the status every --interval until ctx ends; an error is
// shown in place of the table (on stderr with --json).
func watchLoop(ctx context.Context, c *cli.Context, show func() error) error {
	t := time.NewTicker(c.Duration("interval"))
	defer t.Stop()
	for {
		if err := show(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if c.Bool("json") {
				fmt.Fprintln(os.Stderr, "status:", err)
			} else {
				fmt.Print("\x1b[H\x1b[2J")
				fmt.Println("status:", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// quietRedisLog silences go-redis's own dial-error logging: "up" and
// "status" report unreachable processes themselves.
type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}
