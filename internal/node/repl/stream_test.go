package repl

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/resp"
)

// fakeApplier serves a fixed stream, one read at a time, and runs SET,
// MULTI, EXEC and INCR on a map.
type fakeApplier struct {
	reads   []string // what each Fill delivers
	rd      *resp.Reader
	buf     strings.Builder
	inMulti bool
	ran     []string
	batches []int // the size of each prefetched batch
}

var errEOF = errors.New("end of the fake stream")

func (a *fakeApplier) Next() (Request, error) {
	if a.rd == nil {
		return Request{}, resp.ErrIncomplete
	}
	args, err := a.rd.Next()
	if err != nil {
		return Request{}, err
	}
	name := strings.ToUpper(string(args[0]))
	return Request{Args: args, Raw: a.rd.LastRaw(), Cmd: name, Batch: name == "SET" || name == "INCR"}, nil
}

func (a *fakeApplier) Buffered() bool { return a.rd != nil && a.rd.Buffered() > 0 }

func (a *fakeApplier) Fill(time.Time) error {
	if len(a.reads) == 0 {
		return errEOF
	}
	a.buf.WriteString(a.reads[0])
	a.reads = a.reads[1:]
	if a.rd == nil {
		a.rd = resp.NewReader(&fakeSource{a}, resp.ReaderOptions{})
	}
	return a.rd.Fill()
}

func (a *fakeApplier) Prefetch(reqs []Request) { a.batches = append(a.batches, len(reqs)) }

func (a *fakeApplier) Run(req Request) (bool, error) {
	name := req.Cmd.(string)
	a.ran = append(a.ran, name)
	switch name {
	case "MULTI":
		a.inMulti = true
	case "EXEC", "DISCARD":
		a.inMulti = false
	}
	return a.inMulti, nil
}

// fakeSource hands the reader what Fill appended.
type fakeSource struct{ a *fakeApplier }

func (s *fakeSource) Read(p []byte) (int, error) {
	str := s.a.buf.String()
	if str == "" {
		return 0, io.EOF
	}
	n := copy(p, str)
	rest := str[n:]
	s.a.buf.Reset()
	s.a.buf.WriteString(rest)
	return n, nil
}

// fakeFeed records what was forwarded.
type fakeFeed struct {
	fed []string
	off int64
}

func (f *fakeFeed) FeedFromMaster(b []byte) { f.fed = append(f.fed, string(b)); f.off += int64(len(b)) }
func (f *fakeFeed) Offset() int64           { return f.off }

type unfrozenHost struct{ ReplicaHost }

func (unfrozenHost) WaitUnfrozen() {}

// TestRunStream: commands are forwarded after they ran, a transaction as
// one unit at its EXEC (with a GETACK inside it), and keyed commands
// already read run as a prefetched batch.
func TestRunStream(t *testing.T) {
	set := func(k string) string { return cmd("SET", k, "v") }
	a := &fakeApplier{reads: []string{
		set("a") + set("b") + set("c") + cmd("PING"),
		cmd("MULTI") + cmd("INCR", "n"),
		cmd("REPLCONF", "GETACK", "*") + cmd("EXEC"),
	}}
	f := &fakeFeed{}
	l := NewLink(unfrozenHost{}, slog.New(slog.NewTextHandler(io.Discard, nil)), "h", 1, nil)
	err := l.RunStream(a, f, time.Second)
	if !errors.Is(err, errEOF) {
		t.Fatalf("RunStream ended with %v", err)
	}
	wantFed := []string{set("a"), set("b"), set("c"), cmd("PING"),
		cmd("MULTI") + cmd("INCR", "n") + cmd("REPLCONF", "GETACK", "*") + cmd("EXEC")}
	if strings.Join(f.fed, "|") != strings.Join(wantFed, "|") {
		t.Fatalf("fed %q\nwant %q", f.fed, wantFed)
	}
	if got := strings.Join(a.ran, " "); got != "SET SET SET PING MULTI INCR EXEC" {
		t.Fatalf("ran %s", got)
	}
	if len(a.batches) != 1 || a.batches[0] != 3 {
		t.Fatalf("batches %v, want one of 3 SETs", a.batches)
	}
	if l.stream.askedAt.IsZero() {
		t.Fatal("GETACK not seen")
	}
}
