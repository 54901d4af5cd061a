package main

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"

	"github.com/shardis/shardis/internal/compare"
)

func init() {
	extraCommands = append(extraCommands, &cli.Command{
		Name:  "compare",
		Usage: "measure pre-sharding with Sentinel and Redis Cluster side by side (table, results.json, plot)",
		UsageText: "shardnode compare [--masters 3] [--replicas 1] [--duration 20s] [--out compare/]\n\n" +
			"Brings up, one after the other on 127.0.0.1, a pre-sharding deployment (shardnodes +\n" +
			"Sentinels, through client/shardedpool) and a Redis Cluster of the same size (through\n" +
			"client/cluster), with the same failure detection (--down-after: Sentinel\n" +
			"down-after-milliseconds = cluster-node-timeout), and runs on each: GET/SET, pipelined\n" +
			"batches, MGET/MSET over random keys and over hash-tagged keys (each for --duration),\n" +
			"growth by one machine (migrate-shard / add-node + rebalance) and kill -9 of one master\n" +
			"under unique writes (blackout, acknowledged writes lost). Prints a table and writes\n" +
			"results.json and compare.png to --out.\n\n" +
			"shardnode compare --sentinels h:p,... --master-names a,b,... [--cluster h:p] [--disruptive]\n\n" +
			"Measures existing deployments instead (the workloads only; growth and kill -9 with\n" +
			"--disruptive: kill -9 reads the master's pid from INFO server, so the node must run on\n" +
			"this machine; growth needs an empty node, --grow-node, per run).",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "masters", Value: 3, Usage: "masters of each topology (at least 3)"},
			&cli.IntFlag{Name: "replicas", Value: 1, Usage: "replicas per master"},
			&cli.IntFlag{Name: "sentinel-count", Value: 3, Usage: "Sentinels of the pre-sharding topology"},
			&cli.DurationFlag{Name: "duration", Value: 20 * time.Second, Usage: "length of each workload"},
			&cli.DurationFlag{Name: "down-after", Value: 2 * time.Second, Usage: "failure detection of both: down-after-milliseconds = cluster-node-timeout"},
			&cli.DurationFlag{Name: "grow-timeout", Value: 60 * time.Second, Usage: "longest cluster rebalance (then stopped, its whole length projected); 0: no bound"},
			&cli.IntFlag{Name: "clients", Value: 16, Usage: "concurrent client goroutines"},
			&cli.IntFlag{Name: "keys", Value: 100000, Usage: "keys preloaded and used"},
			&cli.IntFlag{Name: "value-size", Value: 64, Usage: "value size in bytes"},
			&cli.IntFlag{Name: "pipeline", Value: 16, Usage: "commands per pipelined batch"},
			&cli.IntFlag{Name: "multi-keys", Value: 10, Usage: "keys per MGET/MSET"},
			&cli.StringFlag{Name: "out", Value: "compare", Usage: "output `directory` (results.json, compare.png, data)"},
			&cli.StringFlag{Name: "only", Usage: "run one topology: presharding or cluster"},
			&cli.StringFlag{Name: "phases", Value: "workloads,grow,failover", Usage: "phases to run, in this order"},
			&cli.StringFlag{Name: "sentinels", Usage: "existing Sentinels `host:port,...`"},
			&cli.StringFlag{Name: "master-names", Usage: "with --sentinels: the shards' master `names`, in ring order"},
			&cli.StringFlag{Name: "cluster", Usage: "existing cluster node `host:port`"},
			&cli.BoolFlag{Name: "disruptive", Usage: "with existing deployments: also kill -9 a master (and grow with --grow-node)"},
			&cli.StringFlag{Name: "grow-node", Usage: "with --disruptive: an empty node `host:port` to add"},
			&cli.StringFlag{Name: "label", Usage: "name of the implementation measured (default shardnode, or external)"},
		},
		Action: runCompare,
	})
}

func runCompare(c *cli.Context) error {
	redis.SetLogger(quietRedisLog{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	opt := compare.Options{
		Masters: c.Int("masters"), Replicas: c.Int("replicas"), Sentinels: c.Int("sentinel-count"),
		Duration: c.Duration("duration"), DownAfter: c.Duration("down-after"), Clients: c.Int("clients"),
		Keys: c.Int("keys"), ValueSize: c.Int("value-size"), Pipeline: c.Int("pipeline"), MultiKeys: c.Int("multi-keys"),
		Out: c.String("out"), Topologies: split(c.String("only")), Phases: split(c.String("phases")),
		SentinelAddrs: split(c.String("sentinels")), MasterNames: split(c.String("master-names")),
		ClusterAddr: c.String("cluster"), Disruptive: c.Bool("disruptive"), GrowNode: c.String("grow-node"),
		Label: c.String("label"), Progress: os.Stdout,
	}
	if c.Duration("grow-timeout") == 0 {
		opt.GrowTimeout = -1
	} else {
		opt.GrowTimeout = c.Duration("grow-timeout")
	}
	if c.Int("replicas") == 0 {
		opt.Replicas = -1
	}
	res, err := compare.Run(ctx, opt)
	if err != nil {
		return err
	}
	compare.WriteTable(os.Stdout, res)
	return nil
}
