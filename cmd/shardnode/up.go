package main

import (
	"context"
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
		Name:  "up",
		Usage: "run a local HA deployment: shards of shardnode (master + replicas) and Sentinels",
		UsageText: "shardnode up [--shards 3] [--replicas 1] [--sentinels 3] [--dir ./shardis-data] ...\n\n" +
			"Starts N shards x (1 master + R replicas) of shardnode on 127.0.0.1 (ports from\n" +
			"--base-port, shard i's nodes consecutive) and S Sentinels (ports from --sentinel-port)\n" +
			"watching masters shard-1..shard-N, as child processes with their data and logs\n" +
			"under --dir. It waits until every Sentinel sees every master with its replicas,\n" +
			"then prints the topology and the Go code to connect a ShardedSentinelPool.\n" +
			"Ctrl-C stops everything. Run \"up\" again with the same --dir to restart the same\n" +
			"deployment with its data and current masters (the shape flags are then ignored).\n\n" +
			"shardnode up --cluster [--masters 3] [--replicas 1] [--base-port 7000] [--node-timeout 5s]\n\n" +
			"Runs a Redis Cluster instead: masters x (1 + replicas) shardnodes (cluster-enabled,\n" +
			"appendonly, nodes.conf in each node's directory; masters on --base-port onwards,\n" +
			"then the replicas), creates the cluster on the first start, waits until every\n" +
			"node reports cluster_state:ok with every replica's link up, and prints the Go code\n" +
			"to connect a client/cluster Client. Later starts on the same --dir restart every\n" +
			"node from its nodes.conf and AOF: data, node ids, slots and roles survive.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "shards", Value: 3, Usage: "number of shards (masters shard-1..shard-N)"},
			&cli.IntFlag{Name: "replicas", Value: 1, Usage: "replicas per shard"},
			&cli.IntFlag{Name: "sentinels", Value: 3, Usage: "number of Sentinels"},
			&cli.IntFlag{Name: "base-port", Value: 7000, Usage: "first node port"},
			&cli.IntFlag{Name: "sentinel-port", Value: 26379, Usage: "first Sentinel port"},
			&cli.StringFlag{Name: "dir", Value: "./shardis-data", Usage: "data `directory` (deploy.json, nodes/<port>/, sentinels/<port>/)"},
			&cli.StringFlag{Name: "sentinel", Value: deploy.SentinelOurs, Usage: "Sentinel to run: ours (shardnode sentinel) or redis (redis-sentinel)"},
			&cli.IntFlag{Name: "quorum", Usage: "Sentinel quorum (default: a majority of --sentinels)"},
			&cli.DurationFlag{Name: "down-after", Value: 5 * time.Second, Usage: "Sentinel down-after-milliseconds"},
			&cli.DurationFlag{Name: "failover-timeout", Usage: "Sentinel failover-timeout (default max(3 x down-after, 10s))"},
			&cli.IntFlag{Name: "metrics-port-offset", Usage: "serve Prometheus /metrics on every process's port + `N` (0: off)"},
			&cli.DurationFlag{Name: "wait", Value: 30 * time.Second, Usage: "longest wait for a healthy deployment"},
			&cli.BoolFlag{Name: "watch", Usage: "after start-up, show the live status table (as shardnode status --watch)"},
			&cli.BoolFlag{Name: "cluster", Usage: "run a Redis Cluster (masters + replicas, no Sentinels) instead of Sentinel shards"},
			&cli.IntFlag{Name: "masters", Value: 3, Usage: "with --cluster: number of masters (at least 3)"},
			&cli.DurationFlag{Name: "node-timeout", Value: 5 * time.Second, Usage: "with --cluster: cluster-node-timeout"},
		},
		Action: runUp,
	})
}

func runUp(c *cli.Context) error {
	redis.SetLogger(quietRedisLog{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opt := deploy.Options{
		Dir: c.String("dir"),
		Plan: deploy.Plan{
			Shards: c.Int("shards"), Replicas: c.Int("replicas"), Sentinels: c.Int("sentinels"),
			BasePort: c.Int("base-port"), SentinelPort: c.Int("sentinel-port"), SentinelKind: c.String("sentinel"),
			Quorum: c.Int("quorum"), DownAfter: c.Duration("down-after"), FailoverTimeout: c.Duration("failover-timeout"),
			MetricsPortOffset: c.Int("metrics-port-offset"),
		},
		WaitTimeout: c.Duration("wait"),
		Progress:    os.Stdout,
	}
	if c.Bool("cluster") {
		opt.Cluster = &deploy.ClusterPlan{Masters: c.Int("masters"), Replicas: c.Int("replicas"), BasePort: c.Int("base-port"),
			NodeTimeout: c.Duration("node-timeout"), MetricsPortOffset: c.Int("metrics-port-offset")}
	}
	d, err := deploy.Up(ctx, opt)
	if err != nil {
		return err
	}
	if d.Restarted {
		for _, f := range []string{"shards", "replicas", "sentinels", "base-port", "sentinel-port", "sentinel", "quorum", "down-after",
			"failover-timeout", "metrics-port-offset", "cluster", "masters", "node-timeout"} {
			if c.IsSet(f) {
				fmt.Printf("note: %s holds a deployment: --%s ignored (remove the directory to start afresh)\n", d.Dir, f)
			}
		}
	}
	d.WriteSummary(os.Stdout)
	if d.Layout.Mode == deploy.ModeCluster {
		return runUpCluster(ctx, stop, c, d)
	}

	var tick <-chan time.Time
	var events []string
	watch := c.Bool("watch")
	// Master switches are announced (and dated in the --watch table).
	col := deploy.NewCollector(d.Layout.SentinelAddrs()...)
	defer col.Close()
	switches := make(chan string, 16)
	go col.Watch(ctx, func(name string, f deploy.Failover) {
		select {
		case switches <- fmt.Sprintf("%s  +switch-master %s %s -> %s", f.Time.Format("15:04:05"), name, f.From, f.To):
		default:
		}
	})
	if watch {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	note := func(msg string) {
		if !watch {
			fmt.Println(msg)
		}
		events = append(events, msg)
		if len(events) > 5 {
			events = events[1:]
		}
	}
	for {
		select {
		case msg := <-switches:
			note(msg)
		case <-ctx.Done():
			stop() // a second Ctrl-C kills us (and, by Pdeathsig, the children)
			fmt.Println("\nstopping: Sentinels, then replicas, then masters ...")
			d.Stop(10 * time.Second)
			fmt.Println("stopped; \"shardnode up --dir", c.String("dir")+"\" restarts the deployment with its data")
			return nil
		case p := <-d.Exited():
			note(fmt.Sprintf("%s  %s exited (%v); log: %s", time.Now().Format("15:04:05"), p.Name, p.Err(), p.LogPath))
		case <-tick:
			st, err := col.Collect(ctx)
			fmt.Print("\x1b[H\x1b[2J")
			fmt.Printf("shardnode up: %s (Ctrl-C stops everything)\n", d.Dir)
			fmt.Printf("pool: MasterNames %s\n      SentinelAddrs %s\n\n",
				strings.Join(d.Layout.MasterNames(), ","), strings.Join(d.Layout.SentinelAddrs(), ","))
			if err != nil {
				fmt.Println("status:", err)
			} else {
				deploy.WriteTable(os.Stdout, st)
			}
			if len(events) > 0 {
				fmt.Println()
				for _, e := range events {
					fmt.Println(e)
				}
			}
		}
	}
}

// runUpCluster is the rest of "up" for a cluster deployment: it reports
// changes of master for a slot range and nodes that exit, shows the live
// status table with --watch, and stops the nodes (replicas, then
// masters) on Ctrl-C.
func runUpCluster(ctx context.Context, stop context.CancelFunc, c *cli.Context, d *deploy.Deployment) error {
	watch := c.Bool("watch")
	col := deploy.NewLayoutCollector(d.Layout)
	defer col.Close()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var events []string
	var lastSeen *deploy.ClusterFailover
	note := func(msg string) {
		if !watch {
			fmt.Println(msg)
		}
		events = append(events, msg)
		if len(events) > 5 {
			events = events[1:]
		}
	}
	for {
		select {
		case <-ctx.Done():
			stop() // a second Ctrl-C kills us (and, by Pdeathsig, the children)
			fmt.Println("\nstopping: replicas, then masters ...")
			d.Stop(10 * time.Second)
			fmt.Println("stopped; \"shardnode up --dir", c.String("dir")+"\" restarts the cluster with its data")
			return nil
		case p := <-d.Exited():
			note(fmt.Sprintf("%s  %s exited (%v); log: %s", time.Now().Format("15:04:05"), p.Name, p.Err(), p.LogPath))
		case <-t.C:
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			st, err := col.Collect(cctx)
			cancel()
			if err == nil && st.LastFailover != nil && !st.LastFailover.Time.IsZero() &&
				(lastSeen == nil || !lastSeen.Time.Equal(st.LastFailover.Time)) {
				f := *st.LastFailover
				lastSeen = &f
				note(fmt.Sprintf("%s  failover: slots %s %s -> %s (epoch %d)", f.Time.Format("15:04:05"), f.Ranges, f.From, f.To, f.Epoch))
			}
			if !watch {
				continue
			}
			fmt.Print("\x1b[H\x1b[2J")
			fmt.Printf("shardnode up --cluster: %s (Ctrl-C stops everything)\n\n", d.Dir)
			if err != nil {
				fmt.Println("status:", err)
			} else {
				deploy.WriteClusterTable(os.Stdout, st)
			}
			if len(events) > 0 {
				fmt.Println()
				for _, e := range events {
					fmt.Println(e)
				}
			}
		}
	}
}
