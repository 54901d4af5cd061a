package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// chunkReader returns its data in pieces of the given sizes (the last size
// repeats), never more than asked.
type chunkReader struct {
	data  []byte
	sizes []int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := c.sizes[0]
	if len(c.sizes) > 1 {
		c.sizes = c.sizes[1:]
	}
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// readAll parses every request of the stream, returning the requests (as
// strings joined by '|') and the terminating error (io.EOF at a clean
// end).
func readAll(t testing.TB, rd io.Reader, opt ReaderOptions) ([]string, error) {
	t.Helper()
	r := NewReader(rd, opt)
	var out []string
	for i := 0; i < 1_000_000; i++ {
		args, err := r.ReadCommand()
		if err != nil {
			return out, err
		}
		parts := make([]string, len(args))
		for j, a := range args {
			parts[j] = string(a)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	t.Fatal("too many requests")
	return nil, nil
}

func protoErr(err error) string {
	var pe *ProtocolError
	if errors.As(err, &pe) {
		return pe.Error()
	}
	if err == io.EOF {
		return ""
	}
	return "other: " + err.Error()
}

var readerCases = []struct {
	name string
	in   string
	want []string
	err  string // "" = clean EOF
}{
	{"multibulk", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n", []string{"SET|k|hello"}, ""},
	{"pipeline", "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", []string{"PING", "ECHO|"}, ""},
	{"binary bulk", "*2\r\n$4\r\nECHO\r\n$4\r\n\r\n\x00\xff\r\n", []string{"ECHO|\r\n\x00\xff"}, ""},
	{"inline", "PING\r\n", []string{"PING"}, ""},
	{"inline LF only", "SET a b\n", []string{"SET|a|b"}, ""},
	{"inline quotes", "SET \"a b\" 'c\\'d' \"\\x41\\n\"\r\n", []string{"SET|a b|c'd|A\n"}, ""},
	{"inline empty lines skipped", "\r\n\r\nPING\r\n", []string{"PING"}, ""},
	{"zero multibulk skipped", "*0\r\n*1\r\n$4\r\nPING\r\n", []string{"PING"}, ""},
	{"negative multibulk skipped", "*-1\r\n*1\r\n$4\r\nPING\r\n", []string{"PING"}, ""},
	{"unbalanced quotes", "SET \"a\r\n", nil, "ERR Protocol error: unbalanced quotes in request"},
	{"closing quote glued", "SET \"a\"b\r\n", nil, "ERR Protocol error: unbalanced quotes in request"},
	{"bad multibulk length", "*abc\r\n", nil, "ERR Protocol error: invalid multibulk length"},
	{"plus multibulk length", "*+1\r\n$4\r\nPING\r\n", nil, "ERR Protocol error: invalid multibulk length"},
	{"leading zero multibulk", "*01\r\n$4\r\nPING\r\n", nil, "ERR Protocol error: invalid multibulk length"},
	{"empty multibulk length", "*\r\n", nil, "ERR Protocol error: invalid multibulk length"},
	{"huge multibulk", "*2147483648\r\n", nil, "ERR Protocol error: invalid multibulk length"},
	{"overflow multibulk", "*99999999999999999999\r\n", nil, "ERR Protocol error: invalid multibulk length"},
	{"expected dollar", "*1\r\n+PING\r\n", nil, "ERR Protocol error: expected '$', got '+'"},
	{"empty bulk header", "*1\r\n\r\n", nil, "ERR Protocol error: expected '$', got '\r'"},
	{"negative bulk", "*1\r\n$-1\r\n", nil, "ERR Protocol error: invalid bulk length"},
	{"bad bulk", "*1\r\n$x\r\n", nil, "ERR Protocol error: invalid bulk length"},
	{"bulk over max", "*1\r\n$536870913\r\n", nil, "ERR Protocol error: invalid bulk length"},
	{"2GB bulk", "*1\r\n$2147483648\r\n", nil, "ERR Protocol error: invalid bulk length"},
	{"too big inline", strings.Repeat("a", 70*1024), nil, "ERR Protocol error: too big inline request"},
	{"too big mbulk count", "*" + strings.Repeat("1", 70*1024), nil, "ERR Protocol error: too big mbulk count string"},
	{"too big bulk count", "*1\r\n$" + strings.Repeat("1", 70*1024), nil, "ERR Protocol error: too big bulk count string"},
	{"truncated bulk", "*1\r\n$10\r\nabc", nil, ""},
	{"truncated header", "*1\r", nil, ""},
}

func TestReaderCases(t *testing.T) {
	for _, tc := range readerCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAll(t, strings.NewReader(tc.in), ReaderOptions{})
			if e := protoErr(err); e != tc.err {
				t.Fatalf("error %q, want %q", e, tc.err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("requests %q, want %q", got, tc.want)
			}
		})
	}
}

// TestReaderEveryCut feeds every case split at every byte (two chunks) and
// one byte at a time: the requests and the error must not depend on how
// the bytes arrive.
func TestReaderEveryCut(t *testing.T) {
	for _, tc := range readerCases {
		if len(tc.in) > 4096 {
			continue
		}
		want, wantErr := readAll(t, strings.NewReader(tc.in), ReaderOptions{})
		for cut := 0; cut <= len(tc.in); cut++ {
			got, err := readAll(t, &chunkReader{data: []byte(tc.in), sizes: []int{max(cut, 1), len(tc.in)}}, ReaderOptions{})
			if protoErr(err) != protoErr(wantErr) || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s cut at %d: %q %v, want %q %v", tc.name, cut, got, err, want, wantErr)
			}
		}
		got, err := readAll(t, &chunkReader{data: []byte(tc.in), sizes: []int{1}}, ReaderOptions{})
		if protoErr(err) != protoErr(wantErr) || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s byte by byte: %q %v, want %q %v", tc.name, got, err, want, wantErr)
		}
	}
}

func TestReaderUnauthenticatedLimits(t *testing.T) {
	cases := []struct{ in, err string }{
		{"*11\r\n", "ERR Protocol error: unauthenticated multibulk length"},
		{"*1\r\n$16385\r\n", "ERR Protocol error: unauthenticated bulk length"},
	}
	for _, tc := range cases {
		r := NewReader(strings.NewReader(tc.in), ReaderOptions{})
		r.SetUnauthenticated(true)
		_, err := r.ReadCommand()
		if protoErr(err) != tc.err {
			t.Fatalf("%q: %v, want %s", tc.in, err, tc.err)
		}
	}
	// The same requests are fine once authenticated.
	r := NewReader(strings.NewReader("*1\r\n$16385\r\n"+strings.Repeat("x", 16385)+"\r\n"), ReaderOptions{})
	if args, err := r.ReadCommand(); err != nil || len(args[0]) != 16385 {
		t.Fatalf("authenticated: %v", err)
	}
}

func TestReaderQueryBufferLimit(t *testing.T) {
	// A bulk bigger than the query buffer limit is cut off without a reply.
	in := "*1\r\n$3000000\r\n" + strings.Repeat("x", 3000000)
	_, err := readAll(t, strings.NewReader(in), ReaderOptions{QueryBufferLimit: 1 << 20})
	if !errors.Is(err, ErrQueryBufferLimit) {
		t.Fatalf("got %v, want ErrQueryBufferLimit", err)
	}
}

// TestReaderDeclaredLengthCostsNothing checks that a huge declared bulk
// does not allocate before its bytes arrive.
func TestReaderDeclaredLengthCostsNothing(t *testing.T) {
	r := NewReader(strings.NewReader("*1\r\n$536870912\r\nabc"), ReaderOptions{})
	for i := 0; i < 10; i++ {
		if _, err := r.Next(); err != ErrIncomplete {
			t.Fatalf("Next: %v", err)
		}
		if err := r.Fill(); err != nil {
			break
		}
	}
	if r.BufferCap() > 1<<20 {
		t.Fatalf("buffer grew to %d bytes for 3 received", r.BufferCap())
	}
}

// TestReaderRoundTrip encodes random requests with AppendCommand (and an
// inline form for simple ones), sends them in random chunks and checks
// they come back unchanged.
func TestReaderRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		var stream []byte
		var want []string
		for n := rng.IntN(20) + 1; n > 0; n-- {
			argc := rng.IntN(6) + 1
			args := make([][]byte, argc)
			parts := make([]string, argc)
			simple := true
			for i := range args {
				a := make([]byte, rng.IntN(40))
				for j := range a {
					if rng.IntN(4) == 0 {
						a[j] = byte(rng.IntN(256))
					} else {
						a[j] = byte('a' + rng.IntN(26))
					}
					if a[j] <= ' ' || a[j] == '"' || a[j] == '\'' || a[j] > '~' {
						simple = false
					}
				}
				if len(a) == 0 {
					simple = false
				}
				args[i], parts[i] = a, string(a)
			}
			if simple && rng.IntN(2) == 0 {
				stream = append(stream, bytes.Join(args, []byte(" "))...)
				stream = append(stream, "\r\n"...)
			} else {
				stream = AppendCommand(stream, args...)
			}
			want = append(want, strings.Join(parts, "|"))
		}
		sizes := []int{rng.IntN(7) + 1, rng.IntN(100) + 1, rng.IntN(3) + 1}
		got, err := readAll(t, &chunkReader{data: stream, sizes: sizes}, ReaderOptions{})
		if err != io.EOF {
			t.Fatalf("round %d: %v", round, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("round %d: got %q, want %q", round, got, want)
		}
	}
}

func TestReaderManyArguments(t *testing.T) {
	const n = 100_000
	args := make([][]byte, n)
	for i := range args {
		args[i] = []byte("x")
	}
	stream := AppendCommand(nil, args...)
	r := NewReader(&chunkReader{data: stream, sizes: []int{4096}}, ReaderOptions{})
	got, err := r.ReadCommand()
	if err != nil || len(got) != n {
		t.Fatalf("got %d args, err %v", len(got), err)
	}
}
