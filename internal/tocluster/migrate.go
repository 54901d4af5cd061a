package tocluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of Options.
const (
	DefaultCutoverTimeout   = 5 * time.Second
	DefaultCutoverLag       = 64 << 10
	DefaultReconnectTimeout = time.Minute
	DefaultLinkTimeout      = time.Minute
	DefaultDialTimeout      = 5 * time.Second
)

// Options configures a migration.
type Options struct {
	// Sentinels are the "host:port" addresses of the source deployment's
	// Sentinels. Required.
	Sentinels []string
	// Masters are the Sentinel master names of the source shards. Required.
	Masters []string
	// To is any node of the target cluster. Required.
	To string
	// Username and Password authenticate to the source nodes and the
	// cluster nodes; SentinelPassword to the Sentinels. Default: none.
	Username, Password string
	SentinelPassword   string

	// NoCutover stops at streaming: the migration keeps the cluster level
	// with the sources until a cut-over is requested (RequestCutover, from
	// another process with --cutover-only) or ctx ends.
	NoCutover bool
	// CutoverTimeout bounds the cut-over: the longest time writes stay
	// paused on the sources. Default 5 s.
	CutoverTimeout time.Duration
	// CutoverLag is the lag (bytes of stream not yet applied, every shard)
	// under which the automatic cut-over starts. Default 64 KiB.
	CutoverLag int64
	// ReconnectTimeout bounds how long a shard may go without a usable
	// source master (a failover in progress) before the migration fails.
	// Default 1 minute.
	ReconnectTimeout time.Duration
	// LinkTimeout is how long a replication link may stay silent before it
	// is considered lost. Default 1 minute (the masters' repl-timeout).
	LinkTimeout time.Duration
	// DialTimeout bounds each connection attempt. Default 5 s.
	DialTimeout time.Duration
	// Force allows a target cluster holding keys that no earlier attempt of
	// a migration put there; they are deleted.
	Force bool
	// ID names the migration (default: random). The notice and commit keys
	// carry it.
	ID string

	// PauseAt, if set, makes the migration stop at one point (PauseCopy,
	// PausePaused, PauseFenced or PauseCommitted), log "tocluster: paused
	// at <point>" and wait for Resume (or ctx's end) before going on: a
	// hook for fault tests (`--pause-at`; the command resumes on
	// SIGUSR1). Default "" (never).
	PauseAt string
	// Resume ends the wait at PauseAt. Nil waits until ctx ends.
	Resume <-chan struct{}
	// Guard, if set, is called at the start of the cut-over, before
	// anything on the sources changes, to start a guardian (a process that
	// survives the tool, see Watch); the cut-over does not start if it
	// fails. Its release function is called when the cut-over has ended
	// in a clean state (committed, or rolled back) with recover false,
	// or with recover true when the guardian must repair it. Default nil.
	Guard func(id string) (release func(recover bool), err error)

	// OnProgress, if set, is called about every ProgressInterval with every
	// shard's progress. Default nil.
	OnProgress func(Progress)
	// ProgressInterval defaults to 500 ms.
	ProgressInterval time.Duration
	// Logger receives the migration's logs. Default: discarded.
	Logger *slog.Logger
}

// Progress is the migration's state, reported while it runs.
type Progress struct {
	// ID is the migration id.
	ID string `json:"id"`
	// Phase is "copying", "streaming", "cutover", "committed" or "done".
	Phase string `json:"phase"`
	// PausedAt is the Options.PauseAt point the migration waits at (or
	// waited at), "" before.
	PausedAt string `json:"paused_at,omitempty"`
	// Shards are the source shards, in Options.Masters order.
	Shards []ShardProgress `json:"shards"`
	// Elapsed is the time since Run started.
	Elapsed time.Duration `json:"elapsed_ns"`
}

// Result is what a finished migration measured.
type Result struct {
	// ID is the migration id.
	ID string `json:"id"`
	// Keys is the number of keys copied from the snapshots.
	Keys int64 `json:"keys"`
	// CopyTime is the time from Run's start until every shard streamed
	// (it includes the sources' repl-diskless-sync-delay).
	CopyTime time.Duration `json:"copy_ns"`
	// CopyRate is Keys over the longest shard's snapshot time (the shards
	// copy in parallel): the copy's keys per second.
	CopyRate float64 `json:"copy_keys_per_sec"`
	// PauseTime is how long writes were paused on the sources.
	PauseTime time.Duration `json:"pause_ns"`
	// Committed tells whether the cut-over was committed.
	Committed bool `json:"committed"`
	// AlreadyCommitted is set when the cluster held a committed migration
	// (ID) when Run started (a rerun after a tool killed past its commit
	// point): Run only finished its fences and clean-up.
	AlreadyCommitted bool `json:"already_committed,omitempty"`
	// Shards are the final per-shard figures.
	Shards []ShardProgress `json:"shards"`
}

// Notice is the value of NoticeKey on the source masters: where the data
// goes. The pool reads it, then checks CommitKey on the cluster.
type Notice struct {
	// ID is the migration id.
	ID string `json:"id"`
	// Seeds are cluster node addresses.
	Seeds []string `json:"seeds"`
	// Fence holds, per source node address, the min-replicas-to-write and
	// min-replicas-max-lag values before the fence, to roll it back.
	Fence map[string][2]string `json:"fence,omitempty"`
}

// Migration is one run of migrate-to-cluster.
type Migration struct {
	opt    Options
	log    *slog.Logger
	start  time.Time
	shards []*shard
	slots  *slotMap

	sentMu    sync.Mutex
	sentinels []*redis.SentinelClient

	phaseMu sync.Mutex
	phase   string
	// pausedAt is the PauseAt point reached ("" before), for Progress.
	pausedAt string

	// name is the CLIENT SETNAME of every connection the migration opens
	// (ClientName(ID) for a run, so that a guardian can tell when a killed
	// tool's connections are gone).
	name string
	// held is set once the PauseAt point was reached.
	held atomic.Bool
}

func (o *Options) defaulted() Options {
	opt := *o
	if opt.CutoverTimeout <= 0 {
		opt.CutoverTimeout = DefaultCutoverTimeout
	}
	if opt.CutoverLag <= 0 {
		opt.CutoverLag = DefaultCutoverLag
	}
	if opt.ReconnectTimeout <= 0 {
		opt.ReconnectTimeout = DefaultReconnectTimeout
	}
	if opt.LinkTimeout <= 0 {
		opt.LinkTimeout = DefaultLinkTimeout
	}
	if opt.DialTimeout <= 0 {
		opt.DialTimeout = DefaultDialTimeout
	}
	if opt.ProgressInterval <= 0 {
		opt.ProgressInterval = 500 * time.Millisecond
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opt.ID == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		opt.ID = hex.EncodeToString(b[:])
	}
	return opt
}

func (m *Migration) now() time.Time { return time.Now() }

func (m *Migration) auth() []string {
	switch {
	case m.opt.Username != "":
		return []string{m.opt.Username, m.opt.Password}
	case m.opt.Password != "":
		return []string{m.opt.Password}
	}
	return nil
}

func (m *Migration) setPhase(p string) {
	m.phaseMu.Lock()
	m.phase = p
	m.phaseMu.Unlock()
}

// Progress returns every shard's progress now.
func (m *Migration) Progress() Progress {
	m.phaseMu.Lock()
	p := Progress{ID: m.opt.ID, Phase: m.phase, PausedAt: m.pausedAt, Elapsed: time.Since(m.start)}
	m.phaseMu.Unlock()
	for _, s := range m.shards {
		p.Shards = append(p.Shards, s.progress())
	}
	return p
}

func (m *Migration) client(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, Username: m.opt.Username, Password: m.opt.Password, ClientName: m.name,
		DisableIdentity: true, MaxRetries: -1, DialerRetries: 1, DialTimeout: m.opt.DialTimeout, ReadTimeout: 5 * time.Second, PoolSize: 2})
}

// resolve asks the Sentinels for a master's address: the first answer
// confirmed by the node itself (ROLE master).
func (m *Migration) resolve(ctx context.Context, name string) (string, error) {
	var errs []error
	for _, sc := range m.sentinels {
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		a, err := sc.GetMasterAddrByName(qctx, name).Result()
		cancel()
		if err != nil || len(a) != 2 {
			errs = append(errs, fmt.Errorf("sentinel: %v", err))
			continue
		}
		addr := a[0] + ":" + a[1]
		c := m.client(addr)
		qctx, cancel = context.WithTimeout(ctx, time.Second)
		role, err := c.Do(qctx, "ROLE").Slice()
		cancel()
		c.Close()
		if err == nil && len(role) > 0 && role[0] == "master" {
			return addr, nil
		}
		errs = append(errs, fmt.Errorf("%s is not a master yet (%v)", addr, err))
	}
	return "", fmt.Errorf("tocluster: master %s: %w", name, errors.Join(errs...))
}

// Run migrates the shards into the cluster: preflight checks, copy,
// stream, and (unless NoCutover) the cut-over. It returns when the
// cut-over is committed and the sources fenced, or with the first error,
// after which the sources serve as before (see doc.go).
func Run(ctx context.Context, o Options) (*Result, error) {
	if len(o.Sentinels) == 0 || len(o.Masters) == 0 || o.To == "" {
		return nil, errors.New("tocluster: --sentinels, --masters and --to are required")
	}
	switch o.PauseAt {
	case "", PauseCopy, PausePaused, PauseFenced, PauseCommitted:
	default:
		return nil, fmt.Errorf("tocluster: unknown pause point %q (copy, paused, fenced, committed)", o.PauseAt)
	}
	opt := o.defaulted()
	m := newMigration(opt, ClientName(opt.ID))
	m.phase = "preflight"
	defer m.closeSentinels()
	return m.run(ctx)
}

// newMigration returns a Migration with its Sentinel clients; its
// connections are named name.
func newMigration(opt Options, name string) *Migration {
	m := &Migration{opt: opt, log: opt.Logger, start: time.Now(), name: name}
	for _, a := range opt.Sentinels {
		m.sentinels = append(m.sentinels, redis.NewSentinelClient(&redis.Options{Addr: a, Password: opt.SentinelPassword,
			DisableIdentity: true, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second}))
	}
	return m
}

func (m *Migration) closeSentinels() {
	for _, sc := range m.sentinels {
		sc.Close()
	}
}

// hold waits at the PauseAt point (once per migration): see
// Options.PauseAt.
func (m *Migration) hold(ctx context.Context, point string, attrs ...any) error {
	if m.opt.PauseAt != point || !m.held.CompareAndSwap(false, true) {
		return nil
	}
	m.phaseMu.Lock()
	m.pausedAt = point
	m.phaseMu.Unlock()
	m.log.Info("tocluster: paused at "+point, append([]any{"id", m.opt.ID}, attrs...)...)
	if m.opt.OnProgress != nil {
		m.opt.OnProgress(m.Progress())
	}
	select {
	case <-m.opt.Resume:
		m.log.Info("tocluster: resumed at " + point)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("tocluster: stopped while paused at %s: %w", point, ctx.Err())
	}
}

func (m *Migration) run(ctx context.Context) (*Result, error) {
	opt := m.opt
	slots, err := readSlotMap(ctx, opt.To, m.auth(), opt.DialTimeout)
	if err != nil {
		return nil, err
	}
	m.slots = slots
	// A rerun first settles what an earlier, interrupted cut-over left:
	// after its commit point it is finished (the fences), before it rolled
	// back (see recover.go).
	// An earlier run of a migration (the attempt key names it) must be
	// gone, its requests landed, before anything of it is settled or
	// deleted: its connections are named after it.
	if prev, err := m.attempt(ctx); err != nil {
		return nil, err
	} else if prev != "" && prev != opt.ID {
		m.log.Info("tocluster: waiting until the earlier migration's connections are gone", "earlier", prev)
		if err := m.waitGone(ctx, ClientName(prev), opt.CutoverTimeout+5*time.Second); err != nil {
			return nil, fmt.Errorf("tocluster: the earlier migration %s still has connections open (is it running? stop it first): %w", prev, err)
		}
	}
	rec, err := m.recover(ctx, "")
	if err != nil {
		return nil, err
	}
	if rec.Committed != "" {
		m.log.Info("tocluster: the cluster holds a committed migration; finished its fences", "id", rec.Committed)
		return &Result{ID: rec.Committed, Committed: true, AlreadyCommitted: true}, nil
	}
	if rec.Aborted != "" {
		m.log.Info("tocluster: rolled back an interrupted cut-over", "id", rec.Aborted, "unfenced", rec.Unfenced)
	}
	if err := m.preflightCluster(ctx); err != nil {
		return nil, err
	}
	masters := make([]string, len(opt.Masters))
	for i, name := range opt.Masters {
		addr, err := m.resolve(ctx, name)
		if err != nil {
			return nil, err
		}
		masters[i] = addr
		if err := m.preflightSource(ctx, name, addr); err != nil {
			return nil, err
		}
	}
	if err := m.markAttempt(ctx); err != nil {
		return nil, err
	}

	runCtx, stopShards := context.WithCancel(ctx)
	errc := make(chan error, len(masters))
	var wg sync.WaitGroup
	// Stop the shards, wait for them, then close their sockets.
	defer func() {
		stopShards()
		wg.Wait()
		for _, s := range m.shards {
			s.ann.close()
			s.t.close()
		}
	}()
	for i, name := range opt.Masters {
		s := &shard{name: name, m: m, log: m.log, tracked: map[string]struct{}{}, master: masters[i], phase: "connecting"}
		s.ann, err = newAnnouncer(hostOf(masters[i]), s.offset.Load)
		if err != nil {
			return nil, err
		}
		s.ann.setMaster(masters[i])
		if s.t, err = openTargets(ctx, slots, m.auth(), opt.DialTimeout, m.name); err != nil {
			s.ann.close()
			return nil, err
		}
		if n, err := m.keyCount(ctx, masters[i]); err == nil {
			s.total.Store(n)
		}
		m.shards = append(m.shards, s)
	}
	m.setPhase("copying")
	for _, s := range m.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.run(runCtx); err != nil {
				s.mu.Lock()
				s.err, s.phase = err, "failed"
				s.mu.Unlock()
				errc <- err
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		m.pollSources(runCtx)
	}()
	if opt.OnProgress != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(opt.ProgressInterval)
			defer t.Stop()
			for {
				select {
				case <-runCtx.Done():
					return
				case <-t.C:
					opt.OnProgress(m.Progress())
				}
			}
		}()
	}

	res := &Result{ID: opt.ID}
	// Wait for every shard to stream with a small lag (and, with
	// NoCutover, for a cut-over request).
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	copied := false
	reqc := m.client(m.slots.owner[slotOf(RequestKey)])
	defer reqc.Close()
	lastAsk := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("tocluster: %w", ctx.Err())
		case err := <-errc:
			return nil, err
		case <-tick.C:
		}
		ready := true
		for _, s := range m.shards {
			p := s.progress()
			if p.Lag < 0 || p.Lag > opt.CutoverLag {
				ready = false
			}
		}
		if ready && !copied {
			copied = true
			res.CopyTime = time.Since(m.start)
			m.setPhase("streaming")
			m.log.Info("tocluster: every shard streams", "after", res.CopyTime)
		}
		if !ready {
			continue
		}
		if opt.NoCutover {
			if time.Since(lastAsk) < 200*time.Millisecond {
				continue
			}
			lastAsk = time.Now()
			if !m.cutoverRequested(ctx, reqc) {
				continue
			}
		}
		break
	}
	for _, s := range m.shards {
		res.Keys += s.keys.Load()
	}
	m.setPhase("cutover")
	m.log.Info("tocluster: cut-over starts", "id", opt.ID)
	pause, err := m.cutover(ctx)
	res.PauseTime = pause
	if err != nil {
		return nil, err
	}
	res.Committed = true
	m.setPhase("done")
	for _, s := range m.shards {
		s.setPhase("done")
	}
	res.Shards = m.Progress().Shards
	var longest time.Duration
	for _, s := range res.Shards {
		longest = max(longest, s.CopyTime)
	}
	if longest > 0 {
		res.CopyRate = float64(res.Keys) / longest.Seconds()
	}
	if opt.OnProgress != nil {
		opt.OnProgress(m.Progress())
	}
	return res, nil
}

// pollSources reads every source master's master_repl_offset for the lag.
func (m *Migration) pollSources(ctx context.Context) {
	clients := map[string]*redis.Client{}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		for _, s := range m.shards {
			addr := s.masterAddr()
			c := clients[addr]
			if c == nil {
				c = m.client(addr)
				clients[addr] = c
			}
			if info, err := infoFields(ctx, c, "replication"); err == nil {
				if o, err := strconv.ParseInt(info["master_repl_offset"], 10, 64); err == nil {
					s.srcOffset.Store(o)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func infoFields(ctx context.Context, c *redis.Client, section string) (map[string]string, error) {
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	text, err := c.Info(qctx, section).Result()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out, nil
}

// keyCount returns db0's key count on addr.
func (m *Migration) keyCount(ctx context.Context, addr string) (int64, error) {
	c := m.client(addr)
	defer c.Close()
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return c.DBSize(qctx).Result()
}

// preflightSource refuses a source that uses a database other than 0 or
// is not a master, before anything is copied.
func (m *Migration) preflightSource(ctx context.Context, name, addr string) error {
	c := m.client(addr)
	defer c.Close()
	info, err := infoFields(ctx, c, "keyspace")
	if err != nil {
		return fmt.Errorf("tocluster: source %s (%s): %w", name, addr, err)
	}
	for k, v := range info {
		if strings.HasPrefix(k, "db") && k != "db0" {
			return fmt.Errorf("tocluster: source %s (%s) holds keys in %s (%s): a cluster has only db 0; move them to db 0 first", name, addr, k, v)
		}
	}
	return nil
}

// preflightCluster checks that the cluster is empty, or holds an earlier
// uncommitted attempt (whose data is deleted: its attempt key or an abort
// marker on the commit key), or holds keys and Force is set.
func (m *Migration) preflightCluster(ctx context.Context) error {
	home := m.slots.owner[slotOf(CommitKey)]
	c := m.client(home)
	defer c.Close()
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	v, err := c.Get(qctx, CommitKey).Result()
	if err != nil && err != redis.Nil {
		return fmt.Errorf("tocluster: cluster node %s: %w", home, err)
	}
	if v != "" && !strings.HasPrefix(v, AbortPrefix) {
		return fmt.Errorf("tocluster: the cluster already holds the committed migration %s", v)
	}
	ac := m.client(m.slots.owner[slotOf(AttemptKey)])
	attempt, _ := ac.Get(qctx, AttemptKey).Result()
	ac.Close()
	if attempt == "" && v != "" {
		attempt = v // an aborted attempt
	}
	var total int64
	for _, a := range m.slots.masters {
		mc := m.client(a)
		n, err := mc.DBSize(qctx).Result()
		if err == nil && n > 0 && attempt == "" && !m.opt.Force {
			mc.Close()
			return fmt.Errorf("tocluster: cluster master %s holds %d keys from no earlier attempt (use --force to delete them)", a, n)
		}
		total += n
		mc.Close()
	}
	if total > 0 {
		m.log.Info("tocluster: deleting an earlier attempt's data from the cluster", "keys", total, "attempt", attempt)
		for _, a := range m.slots.masters {
			mc := m.client(a)
			err := mc.FlushAll(qctx).Err()
			mc.Close()
			if err != nil {
				return fmt.Errorf("tocluster: FLUSHALL on %s: %w", a, err)
			}
		}
	}
	return nil
}

// attempt returns the attempt key's value on the cluster ("" if none).
func (m *Migration) attempt(ctx context.Context) (string, error) {
	c := m.client(m.slots.owner[slotOf(AttemptKey)])
	defer c.Close()
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	v, err := c.Get(qctx, AttemptKey).Result()
	if err == redis.Nil {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("tocluster: read the attempt key: %w", err)
	}
	return v, nil
}

func (m *Migration) markAttempt(ctx context.Context) error {
	c := m.client(m.slots.owner[slotOf(AttemptKey)])
	defer c.Close()
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := c.Set(qctx, AttemptKey, m.opt.ID, 0).Err(); err != nil {
		return fmt.Errorf("tocluster: mark the attempt on the cluster: %w", err)
	}
	return nil
}

// cutoverRequested reports whether RequestKey is set on the cluster (c:
// a client of its slot's master).
func (m *Migration) cutoverRequested(ctx context.Context, c *redis.Client) bool {
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	v, err := c.Get(qctx, RequestKey).Result()
	return err == nil && v != ""
}

func encodeNotice(n Notice) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// ParseNotice decodes a NoticeKey value.
func ParseNotice(s string) (Notice, error) {
	var n Notice
	if err := json.Unmarshal([]byte(s), &n); err != nil {
		return n, fmt.Errorf("tocluster: notice: %w", err)
	}
	if n.ID == "" || len(n.Seeds) == 0 {
		return n, errors.New("tocluster: notice without id or seeds")
	}
	return n, nil
}
