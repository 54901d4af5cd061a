// Package runner connects the pure sentinel.Machine to the network: it
// keeps the links to masters, replicas and peer Sentinels, executes the
// machine's actions and feeds the replies back, serves Sentinel clients
// on its own port, publishes events, and persists the configuration.
package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/shardis/shardis/internal/resp"
	"github.com/shardis/shardis/internal/sentinel"
)

// Options configures a Runner.
type Options struct {
	// ConfigPath is the sentinel.conf the Runner rewrites and watches.
	// Required.
	ConfigPath string
	// File is the parsed configuration (after command-line overrides).
	// Required.
	File *sentinel.File
	// Logger receives events and errors. Default: slog.Default().
	Logger *slog.Logger
	// Rand seeds the machine's randomness. Default: a time-seeded PCG.
	Rand *rand.Rand
	// TickInterval is the timer period. Default 25 ms (Redis: 100 ms):
	// periods are measured in time, so ticking faster only shortens the
	// steps of a failover, one state per tick.
	TickInterval time.Duration
}

// Runner runs one Sentinel.
type Runner struct {
	opt  Options
	log  *slog.Logger
	ctx  context.Context
	stop context.CancelFunc

	mu      sync.Mutex // guards everything below and the machine
	m       *sentinel.Machine
	file    *sentinel.File
	raw     []byte // config file content last read or written
	links   map[sentinel.Addr]*link
	clients map[*client]bool
	started time.Time
	lns     []net.Listener      // one per bind address; lns[0] is Addr()
	users   map[string]*aclUser // ACL users of our port
	events  eventCounts         // switch/failover counts for Stats (stats.go)

	dnsMu sync.Mutex
	dns   map[string]dnsEntry // resolveHost cache
}

// New validates the options and builds the machine.
func New(opt Options) (*Runner, error) {
	if opt.ConfigPath == "" || opt.File == nil {
		return nil, errors.New("sentinel: runner needs a config path and a parsed file")
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Rand == nil {
		opt.Rand = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid())))
	}
	if opt.TickInterval <= 0 {
		opt.TickInterval = 25 * time.Millisecond
	}
	abs, err := filepath.Abs(opt.ConfigPath)
	if err != nil {
		return nil, fmt.Errorf("sentinel: config path: %w", err)
	}
	opt.ConfigPath = abs
	raw, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("sentinel: read config: %w", err)
	}
	m, err := sentinel.NewMachine(opt.File.Config, opt.Rand)
	if err != nil {
		return nil, err
	}
	r := &Runner{opt: opt, log: opt.Logger, m: m, file: opt.File, raw: raw,
		links: map[sentinel.Addr]*link{}, clients: map[*client]bool{}}
	r.initUsers()
	m.SetResolver(r.resolveHost)
	return r, nil
}

func (r *Runner) myID8() string { return r.m.MyID()[:8] }

// Addr returns the listening address once Run has started listening.
func (r *Runner) Addr() net.Addr {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.lns) == 0 {
		return nil
	}
	return r.lns[0].Addr()
}

// Addrs returns every listening address once Run has started listening,
// one per address of the bind directive.
func (r *Runner) Addrs() []net.Addr {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]net.Addr, len(r.lns))
	for i, ln := range r.lns {
		out[i] = ln.Addr()
	}
	return out
}

// listen opens a listener on every address of bind, as redis-sentinel
// does: "*" is every IPv4 address, "::*" every IPv6 one, and an address
// with a leading "-" is optional (skipped when it cannot be bound, as Redis
// skips it on EADDRNOTAVAIL or an unsupported family). With no bind line it
// listens on every address. With port 0 the first listener picks the port
// and the others use the same one.
func listen(bind []string, port int) ([]net.Listener, error) {
	if len(bind) == 0 {
		bind = []string{""}
	}
	var lns []net.Listener
	closeAll := func() {
		for _, ln := range lns {
			ln.Close()
		}
	}
	for _, a := range bind {
		optional := strings.HasPrefix(a, "-")
		a = strings.TrimPrefix(a, "-")
		network := "tcp"
		switch a {
		case "*":
			a, network = "0.0.0.0", "tcp4"
		case "::*":
			a, network = "::", "tcp6"
		}
		ln, err := net.Listen(network, net.JoinHostPort(a, strconv.Itoa(port)))
		if err != nil {
			if optional {
				continue
			}
			closeAll()
			return nil, fmt.Errorf("sentinel: %w", err)
		}
		if port == 0 {
			port = ln.Addr().(*net.TCPAddr).Port
		}
		lns = append(lns, ln)
	}
	if len(lns) == 0 {
		return nil, errors.New("sentinel: listen: no bind address could be used")
	}
	return lns, nil
}

// Run serves until ctx is cancelled (or SHUTDOWN), then closes everything.
// When a bind address cannot be listened on it logs redis-sentinel's
// "Failed listening on port N (TCP), aborting." and returns the error,
// marked as logged ([Logged]).
func (r *Runner) Run(ctx context.Context) error {
	r.ctx, r.stop = context.WithCancel(ctx)
	defer r.stop()
	lns, err := listen(r.file.Bind, r.file.Port)
	if err != nil {
		// redis-sentinel's text (server.c initServer), matched by Redis's
		// test suites.
		r.log.Warn(fmt.Sprintf("Failed listening on port %d (TCP), aborting.", r.file.Port), "err", err)
		return loggedError{err}
	}
	r.mu.Lock()
	r.lns = lns
	r.started = time.Now()
	r.m.Tick(time.Now())
	for _, name := range r.m.MasterNames() {
		if fields, err := r.m.MasterFields(time.Now(), name); err == nil {
			r.log.Info("+monitor", "master", name, "addr", fields[3]+":"+fields[5])
		}
	}
	r.mu.Unlock()
	r.process()
	r.flushConfig() // like Redis: write myid and state at start-up
	r.log.Info("sentinel: ready", "addr", lns[0].Addr().String(), "listeners", len(lns), "myid", r.m.MyID())

	var wg sync.WaitGroup
	wg.Add(2 + len(lns))
	for _, ln := range lns {
		go func() { defer wg.Done(); r.acceptLoop(ln) }()
	}
	go func() { defer wg.Done(); r.tickLoop() }()
	go func() { defer wg.Done(); r.watchConfig() }()
	<-r.ctx.Done()
	for _, ln := range lns {
		ln.Close()
	}
	r.mu.Lock()
	for _, l := range r.links {
		l.close()
	}
	for c := range r.clients {
		c.conn.Close()
	}
	r.mu.Unlock()
	wg.Wait()
	return nil
}

func (r *Runner) tickLoop() {
	t := time.NewTicker(r.opt.TickInterval)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
			r.mu.Lock()
			r.m.Tick(time.Now())
			r.mu.Unlock()
			r.process()
		}
	}
}

// step feeds an observation and handles the result.
func (r *Runner) step(msg sentinel.Message) {
	r.mu.Lock()
	r.m.Step(time.Now(), msg)
	r.mu.Unlock()
	r.process()
}

// process drains the machine: events, actions, persistence.
func (r *Runner) process() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.processLocked()
}

func (r *Runner) processLocked() {
	rd := r.m.Ready()
	for _, e := range rd.Events {
		r.publishEvent(e)
	}
	for _, a := range rd.Actions {
		r.execute(a)
	}
	for _, sc := range rd.Scripts {
		go r.runScript(sc)
	}
	if rd.PersistConfig {
		r.flushConfigLocked()
	}
	if sf := r.m.SimFailure(); sf != 0 {
		for _, e := range rd.Events {
			if (e.Type == sentinel.EventElectedLeader && sf&sentinel.SimCrashAfterElection != 0) ||
				(e.Type == sentinel.EventPromotedReplica && sf&sentinel.SimCrashAfterPromotion != 0) {
				r.log.Warn("sentinel: simulated crash")
				os.Exit(99)
			}
		}
	}
}

func (r *Runner) publishEvent(e sentinel.Event) {
	r.events.observe(e)
	if e.Level >= sentinel.LevelNotice {
		r.log.Info(e.Type+" "+e.Payload, "event", e.Type)
	} else {
		r.log.Debug(e.Type+" "+e.Payload, "event", e.Type)
	}
	if e.Level > sentinel.LevelDebug {
		r.publishLocked(e.Type, e.Payload)
	}
}

// execute performs one action; replies come back through step.
func (r *Runner) execute(a sentinel.Action) {
	if a.Kind == sentinel.ActDisconnect {
		if l := r.links[a.Addr]; l != nil {
			l.close()
			delete(r.links, a.Addr)
		}
		return
	}
	l := r.links[a.Addr]
	if a.Kind == sentinel.ActConnect {
		if l != nil {
			if l.isUp() {
				go r.step(sentinel.LinkUp{Addr: a.Addr})
			}
			return
		}
		l = newLink(r, a)
		r.links[a.Addr] = l
		go l.run()
		return
	}
	if l == nil || !l.isUp() {
		return
	}
	addr := a.Addr
	switch a.Kind {
	case sentinel.ActPing:
		l.send([]string{a.Command("PING")}, func(v resp.Value, _ error) {
			r.step(sentinel.PingReply{Addr: addr, Reply: v.Str})
		})
	case sentinel.ActInfo:
		l.send([]string{a.Command("INFO")}, func(v resp.Value, _ error) {
			if !v.IsError() {
				r.step(sentinel.InfoReply{Addr: addr, Text: v.Str})
			}
		})
	case sentinel.ActPublishHello:
		h := a.Hello
		if h.IP == "" {
			h.IP = l.local()
		}
		l.send([]string{a.Command("PUBLISH"), helloChannel, h.String()}, nil)
	case sentinel.ActAskMasterDown:
		name := a.MasterName
		l.send([]string{"SENTINEL", "is-master-down-by-addr", a.MasterAddr.IP, strconv.Itoa(a.MasterAddr.Port),
			strconv.FormatUint(a.Epoch, 10), a.RunID}, func(v resp.Value, _ error) {
			if len(v.Elems) != 3 || v.Elems[0].Type != ':' || v.Elems[2].Type != ':' {
				return
			}
			r.step(sentinel.MasterDownReply{Addr: addr, MasterName: name, Down: v.Elems[0].Int == 1,
				Leader: v.Elems[1].Str, LeaderEpoch: uint64(v.Elems[2].Int)})
		})
	case sentinel.ActReplicaOf:
		host, port := "NO", "ONE"
		if !a.Target.IsZero() {
			host, port = a.Target.IP, strconv.Itoa(a.Target.Port)
		}
		cmds := [][]string{{"MULTI"}, {"SLAVEOF", host, port}, {"CONFIG", "REWRITE"},
			{"CLIENT", "KILL", "TYPE", "normal"}, {"CLIENT", "KILL", "TYPE", "pubsub"}}
		if a.Unpause {
			// After SLAVEOF: the held master stream ends before the
			// pause does (sentinel/freeze.go).
			cmds = append(cmds, []string{"CLIENT", "UNPAUSE"})
		}
		for _, cmd := range append(cmds, []string{"EXEC"}) {
			cmd[0] = a.Command(cmd[0])
			l.send(cmd, nil)
		}
	case sentinel.ActFreeze:
		// CLIENT PAUSE, then INFO, in a row: the link answers in order,
		// so the INFO callback sees the pause's outcome.
		ms := strconv.FormatInt(a.Pause.Milliseconds(), 10)
		var paused bool
		l.send([]string{a.Command("CLIENT"), "PAUSE", ms, "WRITE"}, func(v resp.Value, _ error) {
			paused = !v.IsError() && v.Str == "OK"
			if !paused {
				r.log.Warn("sentinel: CLIENT PAUSE refused", "addr", addr.String(), "reply", v.Str)
			}
		})
		if a.Refreeze {
			break
		}
		epoch := a.Epoch
		l.send([]string{a.Command("INFO"), "replication"}, func(v resp.Value, _ error) {
			text := ""
			if !v.IsError() {
				text = v.Str
			}
			r.step(sentinel.FreezeReply{Addr: addr, Epoch: epoch, Paused: paused, Text: text})
		})
	case sentinel.ActUnpause:
		l.send([]string{a.Command("CLIENT"), "UNPAUSE"}, nil)
	}
}

// scriptSlots bounds concurrently running scripts (Redis: 16).
var scriptSlots = make(chan struct{}, 16)

// runScript runs a notification or client reconfiguration script with
// Redis's 60 s limit.
func (r *Runner) runScript(sc sentinel.ScriptCall) {
	select {
	case scriptSlots <- struct{}{}:
	case <-r.ctx.Done():
		return
	}
	defer func() { <-scriptSlots }()
	ctx, cancel := context.WithTimeout(r.ctx, 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, sc.Path, sc.Args...).CombinedOutput()
	if err != nil {
		r.log.Warn("sentinel: script failed", "script", sc.Path, "err", err, "output", string(out))
	}
}

// linkGone is called when a link's goroutine ends.
func (r *Runner) linkGone(l *link) {
	r.mu.Lock()
	if r.links[l.addr] == l {
		delete(r.links, l.addr)
	}
	l.mu.Lock()
	l.up = false
	l.mu.Unlock()
	l.cancel()
	r.mu.Unlock()
	if r.ctx.Err() == nil {
		r.step(sentinel.LinkDown{Addr: l.addr})
	}
}

// resolveHost returns the first IP of host (host itself if it is an IP or
// cannot be resolved), cached for a minute.
func (r *Runner) resolveHost(host string) string {
	if net.ParseIP(host) != nil {
		return host
	}
	r.dnsMu.Lock()
	defer r.dnsMu.Unlock()
	if e, ok := r.dns[host]; ok && time.Since(e.at) < time.Minute {
		return e.ip
	}
	ip := host
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if ips, err := net.DefaultResolver.LookupHost(ctx, host); err == nil && len(ips) > 0 {
		ip = ips[0]
	}
	if r.dns == nil {
		r.dns = map[string]dnsEntry{}
	}
	r.dns[host] = dnsEntry{ip, time.Now()}
	return ip
}

type dnsEntry struct {
	ip string
	at time.Time
}

// flushConfig rewrites the config file with the current state.
func (r *Runner) flushConfig() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.flushConfigLocked()
}

func (r *Runner) flushConfigLocked() error {
	out := sentinel.Render(r.raw, r.m.Config(), r.file.Port)
	if bytes.Equal(out, r.raw) {
		if _, err := os.Stat(r.opt.ConfigPath); err == nil {
			return nil
		}
	}
	if err := writeAtomic(r.opt.ConfigPath, out); err != nil {
		r.log.Error("sentinel: rewrite config", "err", err)
		return err
	}
	r.raw = out
	return nil
}

// writeAtomic writes data to a temp file in path's directory, fsyncs it,
// renames it over path and fsyncs the directory.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("sentinel: write config: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if st, serr := os.Stat(path); serr == nil {
			_ = os.Chmod(tmp, st.Mode().Perm())
		}
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("sentinel: write config: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// watchConfig applies operator edits of the config file. Our own rewrites
// are recognised by content and ignored; an invalid file is logged and
// ignored as a whole.
func (r *Runner) watchConfig() {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		r.log.Error("sentinel: config watcher", "err", err)
		return
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(r.opt.ConfigPath)); err != nil {
		r.log.Error("sentinel: config watcher", "err", err)
		return
	}
	var debounce <-chan time.Time
	for {
		select {
		case <-r.ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if filepath.Clean(ev.Name) == r.opt.ConfigPath && ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Rename) != 0 {
				debounce = time.After(150 * time.Millisecond)
			}
		case err := <-w.Errors:
			r.log.Warn("sentinel: config watcher", "err", err)
		case <-debounce:
			debounce = nil
			r.reloadConfig()
		}
	}
}

func (r *Runner) reloadConfig() {
	// Read under the lock: our own rewrites happen under it too, so the
	// content cannot be one of ours half-way through a flush.
	r.mu.Lock()
	defer r.mu.Unlock()
	data, err := os.ReadFile(r.opt.ConfigPath)
	if err != nil || bytes.Equal(data, r.raw) {
		return
	}
	f, err := sentinel.ParseFile(data)
	if err != nil {
		r.log.Error("sentinel: config edit ignored", "err", err)
		return
	}
	if err := r.m.ApplyMasters(time.Now(), f.Config.Masters); err != nil {
		r.log.Error("sentinel: config edit ignored", "err", err)
		return
	}
	r.log.Info("sentinel: applied config edit", "masters", len(f.Config.Masters))
	r.raw = data
	r.processLocked()
}
