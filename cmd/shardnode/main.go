// Command shardnode is a Redis-compatible data server. It is used like
// redis-server:
//
//	shardnode [node.conf] [--directive value ...]
//
// The optional file uses redis.conf syntax and each flag is a redis.conf
// directive (--port 6380 --appendonly yes).
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/shardis/shardis/internal/node"
	"github.com/shardis/shardis/internal/node/config"
)

func main() {
	app := &cli.App{
		Name:      "shardnode",
		Usage:     "a Redis-compatible data server",
		UsageText: "shardnode [node.conf] [--directive value ...]\n\nEvery redis.conf directive is accepted as a flag, for example --port 6380 --appendonly yes.",
		// Directives are parsed by hand below: their set is redis.conf's,
		// and values may start with '-' (bind "* -::*").
		SkipFlagParsing: true,
		HideHelpCommand: true,
		Action:          run,
		Commands:        extraCommands,
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "shardnode:", err)
		os.Exit(1)
	}
}

// extraCommands are subcommands other parts of the project add (up, status,
// migrate-shard).
var extraCommands []*cli.Command

func run(cctx *cli.Context) error {
	args := cctx.Args().Slice()
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		return cli.ShowAppHelp(cctx)
	}
	if len(args) > 0 && (args[0] == "-v" || args[0] == "--version") {
		fmt.Printf("shardnode v=%s\n", node.Version)
		return nil
	}
	cfg, err := parseArgs(args)
	if err != nil {
		return err
	}
	runtime.GOMAXPROCS(int(cfg.Int(config.DirIOThreads)))
	logger, closeLog, err := newLogger(cfg)
	if err != nil {
		return err
	}
	defer closeLog()
	srv, err := node.New(cfg, logger)
	if err != nil {
		return err
	}
	// SIGTERM/SIGINT start a shutdown that a failing final save cancels
	// (the node keeps serving, as redis-server does): see HandleSignal.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		for sig := range sigs {
			srv.HandleSignal(sig)
		}
	}()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	if err := startMetrics(ctx, srv, logger); err != nil { // metrics.go
		return err
	}
	return srv.Run(ctx)
}

// parseArgs builds the configuration from an optional file and
// --directive value... flags, as redis-server does.
func parseArgs(args []string) (*node.Config, error) {
	cfg := node.NewConfig()
	if len(args) > 0 && !strings.HasPrefix(args[0], "--") {
		if err := cfg.ParseFile(args[0]); err != nil {
			return nil, err
		}
		args = args[1:]
	}
	var name string
	var vals []string
	flush := func() error {
		if name == "" {
			return nil
		}
		var err error
		if name == "save" {
			err = cfg.Set("save", strings.Join(vals, " "))
		} else {
			err = cfg.SetArgs(name, vals)
		}
		if err != nil {
			return fmt.Errorf("--%s: %w", name, err)
		}
		name, vals = "", nil
		return nil
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--") && len(a) > 2 {
			if err := flush(); err != nil {
				return nil, err
			}
			name = strings.TrimPrefix(a, "--")
			continue
		}
		if name == "" {
			return nil, fmt.Errorf("unexpected argument %q (flags are --directive value)", a)
		}
		vals = append(vals, a)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return cfg, cfg.Validate()
}

// newLogger logs to the logfile directive's file or, when it is empty
// (the default), to standard output, as redis-server does: Redis's own
// test suite finds a started server's "PID: n" line on its stdout. A
// relative logfile is inside dir: redis-server changes into dir when it
// reads the directive and opens the log from there (the cluster test
// harness writes "dir ./redis_N" and "logfile log.txt", then globs
// */log.txt).
func newLogger(cfg *node.Config) (*slog.Logger, func(), error) {
	var w io.Writer = os.Stdout
	closeFn := func() {}
	if f := logfilePath(cfg); f != "" {
		fh, err := os.OpenFile(f, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("logfile: %w", err)
		}
		w = fh
		closeFn = func() { fh.Close() }
	}
	level := slog.LevelInfo
	switch cfg.Get(config.DirLoglevel) {
	case "debug":
		level = slog.LevelDebug
	case "verbose":
		level = slog.LevelDebug + 2
	case "warning":
		level = slog.LevelWarn
	case "nothing":
		level = slog.LevelError + 4
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), closeFn, nil
}

// logfilePath is the file the logfile directive names, relative to dir
// as for redis-server; "" for standard output.
func logfilePath(cfg *node.Config) string {
	f := cfg.Get(config.DirLogfile)
	if f == "" || filepath.IsAbs(f) {
		return f
	}
	return filepath.Join(cfg.Get(config.DirDir), f)
}
