package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/shardis/shardis/internal/metrics"
	"github.com/shardis/shardis/internal/sentinel/runner"
)

func init() {
	extraCommands = append(extraCommands, &cli.Command{
		Name:  "sentinel",
		Usage: "run shardis's Sentinel (as redis-server --sentinel does)",
		UsageText: "shardnode sentinel sentinel.conf [--directive value ...]\n\n" +
			"The file uses redis-sentinel's syntax and is rewritten with what the Sentinel\n" +
			"learns. Flags are extra config lines: --port 26380 --sentinel \"monitor m 127.0.0.1 6379 2\".\n" +
			"--metrics-addr host:port serves Prometheus metrics at /metrics.",
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			if len(args) == 0 || strings.HasPrefix(args[0], "-") {
				if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
					return cli.ShowSubcommandHelp(c)
				}
				return cli.Exit("shardnode sentinel: the config file is required (shardnode sentinel sentinel.conf)", 2)
			}
			extra, err := directiveLines(args[1:])
			if err != nil {
				return cli.Exit("shardnode sentinel: "+err.Error(), 2)
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			err = runner.RunConfigFile(ctx, args[0], runner.FileOptions{ExtraLines: extra, OnStart: metrics.SentinelHook})
			if err != nil {
				// Once the log is open, as redis-sentinel, the error is
				// in the log only.
				if !runner.Logged(err) {
					fmt.Fprintln(os.Stderr, err)
				}
				os.Exit(1)
			}
			return nil
		},
	})
}

// directiveLines turns "--name v1 v2 --other v" into config lines
// "name v1 v2" and "other v", as redis-server does with its arguments.
func directiveLines(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		if strings.HasPrefix(a, "--") && len(a) > 2 {
			out = append(out, strings.TrimPrefix(a, "--"))
			continue
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("unexpected argument %q (flags are --directive value)", a)
		}
		out[len(out)-1] += " " + a
	}
	return out, nil
}
