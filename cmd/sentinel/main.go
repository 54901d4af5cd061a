// Command sentinel runs a Redis-compatible Sentinel:
//
//	sentinel sentinel.conf [--port 26379] [--sentinel "announce-ip 10.0.0.1"] ...
//
// The configuration file uses redis-sentinel's syntax and is rewritten
// with what the Sentinel learns; flags named like the directives override
// it.
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

func main() {
	app := &cli.App{
		Name:      "sentinel",
		Usage:     "monitor Redis masters and fail them over (Redis Sentinel protocol)",
		ArgsUsage: "sentinel.conf",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "port", Usage: "TCP port to listen on (default 26379, or the file's port)"},
			&cli.StringFlag{Name: "bind", Usage: "address to listen on (default all)"},
			&cli.StringFlag{Name: "requirepass", Usage: "password clients must AUTH with"},
			&cli.StringFlag{Name: "dir", Usage: "working directory"},
			&cli.StringFlag{Name: "logfile", Usage: "log file (default stderr)"},
			&cli.StringFlag{Name: "loglevel", Usage: "debug, verbose, notice or warning", Value: "notice"},
			&cli.StringFlag{Name: "metrics-addr", Usage: "serve Prometheus metrics at http://`host:port`/metrics"},
			&cli.StringSliceFlag{Name: "sentinel", Usage: `a sentinel directive, e.g. "monitor mymaster 127.0.0.1 6379 2" (repeatable)`},
		},
		Action: run,
	}
	if err := app.Run(reorderArgs(os.Args)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// reorderArgs moves the leading config file argument after the flags, so
// "sentinel sentinel.conf --port 1" works as with redis-sentinel.
func reorderArgs(args []string) []string {
	if len(args) > 2 && !strings.HasPrefix(args[1], "-") {
		out := append([]string{args[0]}, args[2:]...)
		return append(out, args[1])
	}
	return args
}

func run(c *cli.Context) error {
	if c.NArg() != 1 {
		return cli.Exit("sentinel: exactly one argument, the config file, is required", 2)
	}
	// Flags are applied like extra config lines after the file's.
	var extra []string
	for _, name := range []string{"port", "bind", "requirepass", "dir", "logfile", "loglevel", "metrics-addr"} {
		if c.IsSet(name) {
			extra = append(extra, name+" "+c.String(name))
		}
	}
	for _, d := range c.StringSlice("sentinel") {
		extra = append(extra, "sentinel "+d)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err := runner.RunConfigFile(ctx, c.Args().First(), runner.FileOptions{ExtraLines: extra, OnStart: metrics.SentinelHook})
	if err != nil {
		if runner.Logged(err) { // in the log already, as redis-sentinel
			return cli.Exit("", 1)
		}
		return cli.Exit(err.Error(), 1)
	}
	return nil
}
