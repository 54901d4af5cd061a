package tocluster

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// signalHandler is a slog handler that closes a channel at the first
// record whose message contains a string, and logs every record to t.
type signalHandler struct {
	slog.Handler
	want string
	seen chan struct{}
}

func (h *signalHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.want) {
		select {
		case <-h.seen:
		default:
			close(h.seen)
		}
	}
	return h.Handler.Handle(ctx, r)
}

func minReplicas(t *testing.T, c *redis.Client) string {
	t.Helper()
	return c.ConfigGet(context.Background(), "min-replicas-to-write").Val()["min-replicas-to-write"]
}

// TestWatchSettlesKilledCutover is the guardian's repair of a tool
// killed between its fence and its commit point: the source's nodes are
// fenced, its master paused, the notice written, and a connection of the
// tool (named ClientName(id)) still open. Watch, at the end of its input
// (the tool's pipe closed by its death), waits until that connection is
// gone, then marks the cut-over aborted on the cluster (so the dead
// tool's commit can never land), lifts the fences from the notice's saved
// settings, unpauses and deletes the notice: the source takes writes.
// Then the committed case: the commit key there, the guardian asked to
// repair, finishes the fences and unpauses; and "done" changes nothing.
func TestWatchSettlesKilledCutover(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	f := startFixture(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := client(t, f.masters[0].Addr)
	r := client(t, f.replicas[0].Addr)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: f.cluster})
	defer cc.Close()
	const id = "killed"
	if err := cc.Set(ctx, AttemptKey, id, 0).Err(); err != nil {
		t.Fatal(err)
	}
	notice := Notice{ID: id, Seeds: f.cluster, Fence: map[string][2]string{f.masters[0].Addr: {"0", "7"}, f.replicas[0].Addr: {"0", "7"}}}
	if err := m.Set(ctx, NoticeKey, encodeNotice(notice), 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*redis.Client{m, r} {
		if err := fence(ctx, c, [2]string{"0", "7"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Do(ctx, "CLIENT", "PAUSE", 30000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	// The dead tool's connection, not closed yet.
	tool := redis.NewClient(&redis.Options{Addr: f.masters[0].Addr, ClientName: ClientName(id), MaxRetries: -1})
	defer tool.Close()
	if err := tool.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	h := &signalHandler{Handler: testLogger(t).Handler(), want: "waiting for its connections", seen: make(chan struct{})}
	opt := Options{Sentinels: []string{f.sentinel.Addr}, Masters: f.names, To: f.cluster[0], ID: id, CutoverTimeout: 3 * time.Second,
		Logger: slog.New(h)}
	pr, pw := io.Pipe()
	type result struct {
		msg string
		err error
	}
	done := make(chan result, 1)
	go func() {
		msg, err := Watch(ctx, opt, pr)
		done <- result{msg, err}
	}()
	if _, err := pw.Write([]byte("{}\n")); err != nil { // any line but "done"/"recover"
		t.Fatal(err)
	}
	pw.Close() // the tool died
	select {
	case <-h.seen:
	case res := <-done:
		t.Fatalf("Watch ended before waiting for the tool's connection: %+v", res)
	}
	// While the tool's connection is open, nothing is settled yet.
	if v := minReplicas(t, m); v != FenceReplicas {
		t.Fatalf("fence lifted while the tool's connection was open: %q", v)
	}
	if v, err := cc.Get(ctx, CommitKey).Result(); err != redis.Nil {
		t.Fatalf("commit key set while the tool's connection was open: %q, %v", v, err)
	}
	tool.Close()
	var res result
	select {
	case res = <-done:
	case <-ctx.Done():
		t.Fatal("Watch did not settle")
	}
	if res.err != nil || !strings.HasPrefix(res.msg, "aborted "+id) {
		t.Fatalf("Watch = %q, %v", res.msg, res.err)
	}
	for i, c := range []*redis.Client{m, r} {
		if v := minReplicas(t, c); v != "0" {
			t.Errorf("node %d: min-replicas-to-write %q after the rollback", i, v)
		}
		if v := c.ConfigGet(ctx, "min-replicas-max-lag").Val()["min-replicas-max-lag"]; v != "7" {
			t.Errorf("node %d: min-replicas-max-lag %q, want the saved 7", i, v)
		}
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Second) // unpaused: no wait for the 30 s pause
	if err := m.Set(wctx, "after", "1", 0).Err(); err != nil {
		t.Errorf("write on the source after the rollback: %v", err)
	}
	wcancel()
	if n := m.Exists(ctx, NoticeKey).Val(); n != 0 {
		t.Error("notice left on the source")
	}
	// The dead tool's commit can no longer land.
	if ok, err := cc.SetNX(ctx, CommitKey, id, 0).Result(); err != nil || ok {
		t.Errorf("commit after the abort: %v, %v; want refused", ok, err)
	}
	if v := cc.Get(ctx, CommitKey).Val(); v != AbortPrefix+id {
		t.Errorf("commit key %q, want %q", v, AbortPrefix+id)
	}

	// "done": the tool ended cleanly; nothing is touched.
	msg, err := Watch(ctx, opt, strings.NewReader("{}\ndone\n"))
	if err != nil || !strings.Contains(msg, "ended") {
		t.Errorf("Watch after done = %q, %v", msg, err)
	}

	// Committed, the replica's fence missing and the master paused: the
	// tool asks for the repair ("recover").
	if err := cc.Set(ctx, CommitKey, "c2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := fence(ctx, m, [2]string{"0", "7"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Do(ctx, "CLIENT", "PAUSE", 30000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	opt.ID = "c2"
	msg, err = Watch(ctx, opt, strings.NewReader("{}\nrecover\n"))
	if err != nil || !strings.HasPrefix(msg, "committed c2") {
		t.Fatalf("Watch after a commit = %q, %v", msg, err)
	}
	if v := minReplicas(t, r); v != FenceReplicas {
		t.Errorf("replica not fenced after the commit's repair: %q", v)
	}
	wctx, wcancel = context.WithTimeout(ctx, time.Second)
	defer wcancel()
	if err := m.Set(wctx, "x", "1", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOREPLICAS") {
		t.Errorf("write on the committed source: %v, want NOREPLICAS at once (unpaused, fenced)", err)
	}
}

// TestCommitLosesToAbort stops a real cut-over at its last point before
// the commit (PauseAt fenced) and runs Recover there, as a guardian or
// --cutover-only does for a tool it takes for dead: the cut-over is
// marked aborted and its fences lifted. Resumed, the tool's commit (SET
// NX) is refused, it rolls back, and the source serves as before; a
// rerun completes.
func TestCommitLosesToAbort(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	f := startFixture(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := client(t, f.masters[0].Addr)
	preload(t, m, "a", 200)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: f.cluster})
	defer cc.Close()
	h := &signalHandler{Handler: testLogger(t).Handler(), want: "paused at " + PauseFenced, seen: make(chan struct{})}
	resume := make(chan struct{})
	opt := Options{Sentinels: []string{f.sentinel.Addr}, Masters: f.names, To: f.cluster[0], ID: "lose",
		CutoverTimeout: 10 * time.Second, PauseAt: PauseFenced, Resume: resume, Logger: slog.New(h)}
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, opt)
		done <- err
	}()
	select {
	case <-h.seen:
	case err := <-done:
		t.Fatalf("Run ended before the pause point: %v", err)
	}
	if v := minReplicas(t, m); v != FenceReplicas {
		t.Fatalf("not fenced at %s: %q", PauseFenced, v)
	}
	// Recover, as --cutover-only or a rerun runs it: the tool's own link
	// is among the master's replicas (its announcer answers CONFIG GET
	// with nothing), the cut-over is marked aborted and rolled back.
	rec, err := Recover(ctx, Options{Sentinels: []string{f.sentinel.Addr}, Masters: f.names, To: f.cluster[0], Logger: testLogger(t)})
	if err != nil || rec.Aborted != "lose" || rec.Unfenced != 2 {
		t.Fatalf("Recover = %+v, %v", rec, err)
	}
	if v := cc.Get(ctx, CommitKey).Val(); v != AbortPrefix+"lose" {
		t.Fatalf("commit key %q after Recover", v)
	}
	close(resume)
	err = <-done
	if err == nil || !strings.Contains(err.Error(), "commit refused") {
		t.Fatalf("Run after the abort marker: %v", err)
	}
	if v := minReplicas(t, m); v != "0" {
		t.Errorf("fence left after the refused commit: %q", v)
	}
	if err := m.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Errorf("write on the source: %v", err)
	}
	// A rerun clears the aborted attempt and completes.
	opt.PauseAt, opt.ID, opt.Logger = "", "lose2", testLogger(t)
	res, err := Run(ctx, opt)
	if err != nil || !res.Committed || res.AlreadyCommitted {
		t.Fatalf("rerun: %+v, %v", res, err)
	}
	if v := cc.Get(ctx, "after").Val(); v != "1" {
		t.Errorf("after on the cluster = %q", v)
	}
}

// TestRerunWaitsForEarlierTool: a rerun finds the attempt key of an
// earlier migration whose connection is still open (a tool not dead yet,
// or its requests still on the way): it deletes and settles nothing
// until that connection is gone, then completes.
func TestRerunWaitsForEarlierTool(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	f := startFixture(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := client(t, f.masters[0].Addr)
	preload(t, m, "a", 100)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: f.cluster})
	defer cc.Close()
	if err := cc.Set(ctx, AttemptKey, "earlier", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cc.Set(ctx, "stale", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	home, err := cc.MasterForKey(ctx, "stale")
	if err != nil {
		t.Fatal(err)
	}
	earlier := redis.NewClient(&redis.Options{Addr: home.Options().Addr, ClientName: ClientName("earlier"), MaxRetries: -1})
	defer earlier.Close()
	if err := earlier.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	h := &signalHandler{Handler: testLogger(t).Handler(), want: "waiting until the earlier migration", seen: make(chan struct{})}
	opt := Options{Sentinels: []string{f.sentinel.Addr}, Masters: f.names, To: f.cluster[0], ID: "rerun",
		CutoverTimeout: 20 * time.Second, Logger: slog.New(h)}
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, opt)
		done <- err
	}()
	select {
	case <-h.seen:
	case err := <-done:
		t.Fatalf("Run ended before waiting: %v", err)
	}
	// The earlier attempt's keys are still there: nothing was deleted.
	if v := cc.Get(ctx, "stale").Val(); v != "1" {
		t.Fatalf("the earlier attempt's key was deleted while its tool was connected: %q", v)
	}
	earlier.Close()
	if err := <-done; err != nil {
		t.Fatalf("rerun: %v", err)
	}
	if cc.Exists(ctx, "stale").Val() != 0 || cc.Get(ctx, CommitKey).Val() != "rerun" {
		t.Errorf("after the rerun: stale key kept or no commit")
	}
}
