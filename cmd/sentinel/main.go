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
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/shardis/shardis/internal/sentinel"
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
	path, err := filepath.Abs(c.Args().First())
	if err != nil {
		return cli.Exit(fmt.Sprintf("sentinel: %v", err), 1)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return cli.Exit(fmt.Sprintf("sentinel: %v (Sentinel needs a writable config file)", err), 1)
	}
	// Flags are applied like extra config lines after the file's.
	extra := string(data) + "\n"
	for _, name := range []string{"port", "bind", "requirepass", "dir", "logfile", "loglevel"} {
		if c.IsSet(name) {
			extra += name + " " + c.String(name) + "\n"
		}
	}
	for _, d := range c.StringSlice("sentinel") {
		extra += "sentinel " + d + "\n"
	}
	f, err := sentinel.ParseFile([]byte(extra))
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	if c.IsSet("port") {
		f.Port = c.Int("port")
		f.Config.Port = f.Port
	}
	// As redis-sentinel: dir applies before the log file is opened.
	if f.Dir != "" {
		if err := os.Chdir(f.Dir); err != nil {
			return cli.Exit(fmt.Sprintf("sentinel: dir: %v", err), 1)
		}
	}
	logger, closeLog, err := newLogger(f)
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	defer closeLog()
	if f.PidFile != "" {
		_ = os.WriteFile(f.PidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
		defer os.Remove(f.PidFile)
	}
	r, err := runner.New(runner.Options{ConfigPath: path, File: f, Logger: logger})
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := r.Run(ctx); err != nil {
		return cli.Exit(err.Error(), 1)
	}
	logger.Info("sentinel: shut down")
	return nil
}

func newLogger(f *sentinel.File) (*slog.Logger, func(), error) {
	var w io.Writer = os.Stderr
	closeFn := func() {}
	if f.LogFile != "" {
		lf, err := os.OpenFile(f.LogFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("sentinel: logfile: %w", err)
		}
		w, closeFn = lf, func() { lf.Close() }
	}
	level := slog.LevelInfo
	switch strings.ToLower(f.LogLevel) {
	case "debug", "verbose":
		level = slog.LevelDebug
	case "warning":
		level = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), closeFn, nil
}
