package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/shardis/shardis/internal/sentinel"
)

// FileOptions tunes [RunConfigFile].
type FileOptions struct {
	// ExtraLines are sentinel.conf lines applied after the file's, as
	// command-line overrides ("port 26380", "sentinel monitor m 127.0.0.1
	// 6379 2"). They are not written to the file.
	ExtraLines []string
	// Logger receives the Sentinel's log. Default: a text logger on the
	// file's logfile (stderr if none) at its loglevel.
	Logger *slog.Logger
	// OnStart, if set, is called once the configuration is loaded and the
	// Runner built, before it starts serving (to attach a metrics endpoint,
	// for example). An error stops the start-up.
	OnStart func(ctx context.Context, r *Runner, f *sentinel.File) error
}

// RunConfigFile runs a Sentinel from the sentinel.conf at path (which it
// rewrites with what it learns, as redis-sentinel does) until ctx ends or
// SHUTDOWN. The file's dir directive is applied (os.Chdir) before the log
// file is opened, and its pidfile is written and removed. An error after
// the log is open is written to the log and reported by [Logged].
func RunConfigFile(ctx context.Context, path string, opt FileOptions) error {
	path, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("sentinel: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("sentinel: %w (Sentinel needs a writable config file)", err)
	}
	text := string(data) + "\n"
	for _, l := range opt.ExtraLines {
		text += l + "\n"
	}
	f, err := sentinel.ParseFile([]byte(text))
	if err != nil {
		return err
	}
	// As redis-sentinel: dir applies before the log file is opened.
	if f.Dir != "" {
		if err := os.Chdir(f.Dir); err != nil {
			return fmt.Errorf("sentinel: dir: %w", err)
		}
	}
	logger := opt.Logger
	if logger == nil {
		l, closeLog, err := NewFileLogger(f)
		if err != nil {
			return err
		}
		defer closeLog()
		logger = l
	}
	if f.PidFile != "" {
		_ = os.WriteFile(f.PidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
		defer os.Remove(f.PidFile)
	}
	if err := runLogged(ctx, path, f, logger, opt.OnStart); err != nil {
		if !Logged(err) {
			logger.Error("sentinel: aborting", "err", err)
			err = loggedError{err}
		}
		return err
	}
	logger.Info("sentinel: shut down")
	return nil
}

// runLogged builds and runs the Runner once the log is open.
func runLogged(ctx context.Context, path string, f *sentinel.File, logger *slog.Logger,
	onStart func(context.Context, *Runner, *sentinel.File) error) error {
	r, err := New(Options{ConfigPath: path, File: f, Logger: logger})
	if err != nil {
		return err
	}
	if onStart != nil {
		if err := onStart(ctx, r, f); err != nil {
			return err
		}
	}
	return r.Run(ctx)
}

// loggedError is an error the Sentinel has already written to its log.
type loggedError struct{ err error }

func (e loggedError) Error() string { return e.err.Error() }
func (e loggedError) Unwrap() error { return e.err }

// Logged reports whether err, returned by [RunConfigFile] or
// [Runner.Run], was already written to the Sentinel's log. A failure
// after the log is open (a port already in use, for example) goes to the
// log only, as redis-sentinel logs it and exits with status 1: a caller
// printing it to stderr too would write it where redis-sentinel writes
// nothing (Redis's Sentinel test harness counts any stderr output as a
// failed test).
func Logged(err error) bool {
	var l loggedError
	return errors.As(err, &l)
}

// NewFileLogger returns a text logger writing to the file's logfile
// (stderr when empty) at its loglevel, and a function closing the file.
func NewFileLogger(f *sentinel.File) (*slog.Logger, func(), error) {
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

// Directive returns the value of the last directive called name among the
// directives the Sentinel does not interpret itself (such as metrics-addr),
// or "" when absent.
func Directive(f *sentinel.File, name string) string {
	v := ""
	for _, u := range f.Unknown {
		k, rest, _ := strings.Cut(u, " ")
		if strings.EqualFold(k, name) {
			v = strings.TrimSpace(rest)
		}
	}
	return v
}
