package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/shardis/shardis/internal/migrate"
)

func init() {
	extraCommands = append(extraCommands, &cli.Command{
		Name:  "migrate-shard",
		Usage: "move one shard to a new node under live traffic (REPLICAOF, catch up, FAILOVER, repoint)",
		UsageText: "shardnode migrate-shard --from host:port --to host:port [--topology file --shard name] [--retire]\n\n" +
			"The new node replicates from the old master, then the two swap roles with FAILOVER:\n" +
			"writes pause on the old master until the new one has all of them, so no acknowledged\n" +
			"write is lost. With --topology the shard's line in a shardedpool topology file is\n" +
			"rewritten atomically and pools watching it follow.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "from", Usage: "current master `host:port`", Required: true},
			&cli.StringFlag{Name: "to", Usage: "new node `host:port` (an empty master)", Required: true},
			&cli.StringFlag{Name: "user", Usage: "username for both nodes"},
			&cli.StringFlag{Name: "password", Usage: "password for both nodes (also set as the new node's masterauth)"},
			&cli.StringFlag{Name: "topology", Usage: "shardedpool topology `file` to repoint"},
			&cli.StringFlag{Name: "shard", Usage: "shard `name` in the topology file"},
			&cli.DurationFlag{Name: "switch-timeout", Value: migrate.DefaultSwitchTimeout, Usage: "longest write pause during the switch"},
			&cli.DurationFlag{Name: "sync-timeout", Value: migrate.DefaultSyncTimeout, Usage: "longest initial synchronisation"},
			&cli.BoolFlag{Name: "retire", Usage: "shut the old node down after the switch"},
			&cli.BoolFlag{Name: "force", Usage: "allow a target that already holds keys"},
		},
		Action: func(c *cli.Context) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return migrate.Run(ctx, migrate.Options{
				From: c.String("from"), To: c.String("to"),
				Username: c.String("user"), Password: c.String("password"),
				TopologyFile: c.String("topology"), Shard: c.String("shard"),
				SwitchTimeout: c.Duration("switch-timeout"), SyncTimeout: c.Duration("sync-timeout"),
				Retire: c.Bool("retire"), Force: c.Bool("force"), Progress: os.Stdout,
			})
		},
	})
}
