package resp

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/shardis/shardis/internal/testutil"
)

// countingReader is chunkReader recording the size of every Read's buffer.
type countingReader struct {
	chunkReader
	asked []int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.asked = append(c.asked, len(p))
	return c.chunkReader.Read(p)
}

func bigBytes(n int, seed uint64) []byte { return testutil.RandomBytes(n, seed, 7) }

// bigPipeline is [SET a b] [RESTORE k 0 <big> REPLACE] [ECHO <10 KiB>]
// [PING]: a big bulk between small arguments, then more input that a
// reader compacting its buffer would write over the big bulk's bytes.
func bigPipeline(big []byte) ([]byte, [][][]byte) {
	echo := bytes.Repeat([]byte("e"), 10<<10)
	want := [][][]byte{
		{[]byte("SET"), []byte("a"), []byte("b")},
		{[]byte("RESTORE"), []byte("k"), []byte("0"), big, []byte("REPLACE")},
		{[]byte("ECHO"), echo},
		{[]byte("PING")},
	}
	var stream []byte
	for _, cmd := range want {
		stream = AppendCommand(stream, cmd...)
	}
	return stream, want
}

// TestReaderBigBulkRetained reads a pipeline holding a 200 KiB bulk in
// pieces of many sizes: every request is parsed right, the big argument
// is the only retainable one, its bytes are intact after the requests
// that follow were read, and its buffer is its exact size.
func TestReaderBigBulkRetained(t *testing.T) {
	big := bigBytes(200<<10, 1)
	stream, want := bigPipeline(big)
	readers := map[string]func() io.Reader{
		"one byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(stream)) },
		"odd":      func() io.Reader { return &chunkReader{data: stream, sizes: []int{7, 1000, 3, 65521}} },
		"half":     func() io.Reader { return iotest.HalfReader(bytes.NewReader(stream)) },
		"64k":      func() io.Reader { return &chunkReader{data: stream, sizes: []int{64 << 10}} },
		"whole":    func() io.Reader { return bytes.NewReader(stream) },
	}
	for name, mk := range readers {
		t.Run(name, func(t *testing.T) {
			r := NewReader(mk(), ReaderOptions{})
			var kept []byte
			for i, w := range want {
				args, err := r.ReadCommand()
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if len(args) != len(w) {
					t.Fatalf("request %d: %d arguments, want %d", i, len(args), len(w))
				}
				for j := range w {
					if !bytes.Equal(args[j], w[j]) {
						t.Fatalf("request %d argument %d: %d bytes %.20q, want %d bytes", i, j, len(args[j]), args[j], len(w[j]))
					}
					retain := r.ArgRetainable(j)
					if wantRetain := i == 1 && j == 3; retain != wantRetain {
						t.Fatalf("request %d argument %d: ArgRetainable %v, want %v", i, j, retain, wantRetain)
					}
				}
				if i == 1 {
					kept = args[3]
					if cap(kept) != len(big) {
						t.Fatalf("retained argument has capacity %d, want %d", cap(kept), len(big))
					}
					if r.LastRaw() != nil || r.LastLen() != len(AppendCommand(nil, w...)) {
						t.Fatalf("LastRaw %d bytes, LastLen %d", len(r.LastRaw()), r.LastLen())
					}
				}
			}
			if _, err := r.ReadCommand(); err != io.EOF {
				t.Fatalf("after the pipeline: %v", err)
			}
			if r.Consumed() != int64(len(stream)) {
				t.Fatalf("Consumed %d, want %d", r.Consumed(), len(stream))
			}
			if kept != nil && !bytes.Equal(kept, big) {
				t.Fatal("the retained argument changed after the following requests were read")
			}
		})
	}
}

// TestReaderBigBulkReads checks how a big bulk is read: reads never ask
// for more than the bulk's missing bytes, and once its share has arrived
// one buffer of exactly the bulk and its CRLF is filled by reads asking
// for exactly the bytes still missing.
func TestReaderBigBulkReads(t *testing.T) {
	const n = 200 << 10
	big := bigBytes(n, 2)
	stream, _ := bigPipeline(big)
	cr := &countingReader{chunkReader: chunkReader{data: stream, sizes: []int{5000}}}
	r := NewReader(cr, ReaderOptions{})
	if args, err := r.ReadCommand(); err != nil || string(args[0]) != "SET" {
		t.Fatalf("first request: %q %v", args, err)
	}
	ownReads := 0
	for {
		args, err := r.Next()
		if err == nil {
			if string(args[0]) != "RESTORE" || !bytes.Equal(args[3], big) || !r.ArgRetainable(3) {
				t.Fatalf("second request: %.40q", args)
			}
			break
		}
		if err != ErrIncomplete {
			t.Fatal(err)
		}
		missing := -1
		if r.bulkLen == n {
			missing = n + 2 - (r.w - r.r - r.pos)
		}
		if err := r.Fill(); err != nil {
			t.Fatal(err)
		}
		asked := cr.asked[len(cr.asked)-1]
		if missing >= 0 && asked > missing {
			t.Fatalf("a read asked for %d bytes, %d of the bulk missing", asked, missing)
		}
		if r.BufferCap() == n+2 {
			ownReads++
			if asked != missing {
				t.Fatalf("in the bulk's buffer a read asked for %d bytes, %d missing", asked, missing)
			}
		}
	}
	if ownReads == 0 {
		t.Fatalf("the bulk never had a buffer of its size (buffer %d)", r.BufferCap())
	}
	// The requests after it start in a fresh small buffer.
	if args, err := r.ReadCommand(); err != nil || string(args[0]) != "ECHO" || r.BufferCap() > 64<<10 {
		t.Fatalf("third request: %v, buffer %d", err, r.BufferCap())
	}
}

// TestReaderBigBulkRefusals: the query buffer limit counts the bytes of
// a request kept in buffers the reader left, and a big bulk of an
// unauthenticated client is refused before anything is allocated.
func TestReaderBigBulkRefusals(t *testing.T) {
	two := AppendCommand(nil, []byte("SET"), bytes.Repeat([]byte("x"), 600<<10), bytes.Repeat([]byte("y"), 600<<10))
	for _, sizes := range [][]int{{4096}, {999}} {
		_, err := readAll(t, &chunkReader{data: two, sizes: sizes}, ReaderOptions{QueryBufferLimit: 1 << 20})
		if !errors.Is(err, ErrQueryBufferLimit) {
			t.Fatalf("two 600 KiB bulks, limit 1 MiB, reads of %d: %v, want ErrQueryBufferLimit", sizes[0], err)
		}
	}
	if _, err := readAll(t, &chunkReader{data: two, sizes: []int{4096}}, ReaderOptions{QueryBufferLimit: 2 << 20}); err != io.EOF {
		t.Fatalf("limit 2 MiB: %v", err)
	}
	r := NewReader(strings.NewReader("*2\r\n$3\r\nGET\r\n$40000\r\n"+strings.Repeat("x", 40000)+"\r\n"), ReaderOptions{})
	r.SetUnauthenticated(true)
	if _, err := r.ReadCommand(); protoErr(err) != "ERR Protocol error: unauthenticated bulk length" {
		t.Fatalf("unauthenticated big bulk: %v", err)
	}
}

// TestReaderBigBulkShare: a big bulk's buffer is allocated only once a
// sixteenth of it has arrived; before, the buffer follows the bytes.
func TestReaderBigBulkShare(t *testing.T) {
	const n = 8 << 20
	head := "*2\r\n$3\r\nSET\r\n$8388608\r\n"
	body := bytes.Repeat([]byte("z"), n/16-4096)
	r := NewReader(&chunkReader{data: append([]byte(head), body...), sizes: []int{64 << 10}}, ReaderOptions{})
	for {
		if _, err := r.Next(); err != ErrIncomplete {
			t.Fatal(err)
		}
		if err := r.Fill(); err != nil {
			break
		}
	}
	if c := r.BufferCap(); c > 1<<20 {
		t.Fatalf("%d bytes of an 8 MiB bulk received: buffer of %d", len(body), c)
	}
	// 8 KiB more pass the share: the bulk gets its buffer.
	r.rd = &chunkReader{data: bytes.Repeat([]byte("z"), 8192), sizes: []int{4096}}
	for i := 0; i < 3; i++ {
		if _, err := r.Next(); err != ErrIncomplete {
			t.Fatal(err)
		}
		_ = r.Fill()
	}
	if c := r.BufferCap(); c != n+2 {
		t.Fatalf("past the share: buffer of %d, want %d", c, n+2)
	}
}

// TestReaderKeepRaw: with KeepRaw a big bulk stays in the request's
// buffer, LastRaw returns the whole request and nothing is retainable.
func TestReaderKeepRaw(t *testing.T) {
	big := bigBytes(100<<10, 3)
	stream, want := bigPipeline(big)
	r := NewReader(&chunkReader{data: stream, sizes: []int{3000}}, ReaderOptions{KeepRaw: true})
	for i, w := range want {
		args, err := r.ReadCommand()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r.LastRaw(), AppendCommand(nil, w...)) || r.HasRetainable() || len(args) != len(w) {
			t.Fatalf("request %d: LastRaw %d bytes, retainable %v", i, len(r.LastRaw()), r.HasRetainable())
		}
	}
}

// TestReaderBigRoundTrip sends random pipelines mixing big and small
// bulks in random pieces: the requests come back unchanged, and every
// retained argument is still intact at the end.
func TestReaderBigRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 40; round++ {
		var stream []byte
		var want []string
		for n := rng.IntN(6) + 1; n > 0; n-- {
			argc := rng.IntN(4) + 1
			args := make([][]byte, argc)
			parts := make([]string, argc)
			for i := range args {
				size := rng.IntN(40)
				if rng.IntN(3) == 0 {
					size = BigArgLen - 2 + rng.IntN(100<<10)
				}
				args[i] = bigBytes(size, rng.Uint64())
				parts[i] = string(args[i])
			}
			stream = AppendCommand(stream, args...)
			want = append(want, strings.Join(parts, "|"))
		}
		sizes := []int{rng.IntN(7) + 1, rng.IntN(70000) + 1, rng.IntN(3) + 1, rng.IntN(9000) + 1}
		r := NewReader(&chunkReader{data: stream, sizes: sizes}, ReaderOptions{})
		type keptArg struct {
			b    []byte
			want string
		}
		var kept []keptArg
		for i := range want {
			args, err := r.ReadCommand()
			if err != nil {
				t.Fatalf("round %d request %d: %v", round, i, err)
			}
			parts := make([]string, len(args))
			for j, a := range args {
				parts[j] = string(a)
				if r.ArgRetainable(j) {
					kept = append(kept, keptArg{a, string(a)})
				}
			}
			if got := strings.Join(parts, "|"); got != want[i] {
				t.Fatalf("round %d request %d differs", round, i)
			}
		}
		if _, err := r.ReadCommand(); err != io.EOF {
			t.Fatalf("round %d: %v", round, err)
		}
		for _, k := range kept {
			if string(k.b) != k.want {
				t.Fatalf("round %d: a retained argument changed", round)
			}
		}
	}
}

// TestReaderBigBulkAllocs: reading a 1 MiB bulk arriving in 64 KiB reads
// allocates little more than the bulk (growing by doubling allocated
// about twice its size): the bulk's buffer, and the small buffers that
// held its first sixteenth.
func TestReaderBigBulkAllocs(t *testing.T) {
	const n = 1 << 20
	big := bigBytes(n, 5)
	stream := AppendCommand(nil, []byte("SET"), []byte("k"), big)
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	r := NewReader(&chunkReader{data: stream, sizes: []int{64 << 10}}, ReaderOptions{})
	args, err := r.ReadCommand()
	runtime.ReadMemStats(&ms1)
	if err != nil || !bytes.Equal(args[2], big) {
		t.Fatal(err)
	}
	if got := ms1.TotalAlloc - ms0.TotalAlloc; got > n+n/4+(64<<10) {
		t.Fatalf("reading a %d-byte bulk allocated %d bytes", n, got)
	}
}

// TestReaderRecycle: a caller that keeps nothing of a request gives its
// big bulk's buffer back (Recycle), and the next big bulk of about its
// size is read into it, as the small buffer left at the switch serves
// the requests after it: a pipeline of 40 KiB SETs allocates no buffer
// per request. Without Recycle every big bulk has a buffer of its own.
func TestReaderRecycle(t *testing.T) {
	val := bigBytes(40<<10, 9)
	var stream []byte
	const n = 20
	for i := 0; i < n; i++ {
		stream = AppendCommand(stream, []byte("SET"), []byte("key"), val)
	}
	for _, recycle := range []bool{false, true} {
		var bufs []*byte
		allocs := testing.AllocsPerRun(1, func() {
			bufs = bufs[:0]
			r := NewReader(&chunkReader{data: stream, sizes: []int{64 << 10}}, ReaderOptions{})
			for i := 0; i < n; i++ {
				args, err := r.ReadCommand()
				if err != nil || !bytes.Equal(args[2], val) || !r.ArgRetainable(2) {
					t.Fatalf("request %d: %v", i, err)
				}
				bufs = append(bufs, &args[2][0])
				if recycle {
					r.Recycle()
				}
			}
		})
		distinct := map[*byte]bool{}
		for _, b := range bufs {
			distinct[b] = true
		}
		if recycle && (len(distinct) > 2 || allocs >= n/2+4) {
			t.Fatalf("recycling: %d buffers for %d bulks, %.0f allocations", len(distinct), n, allocs)
		}
		if !recycle && len(distinct) != n {
			t.Fatalf("without Recycle: %d buffers for %d bulks", len(distinct), n)
		}
	}
	// A buffer is not reused for a bulk of less than half its size.
	small := bigBytes(BigArgLen+100, 10)
	stream = AppendCommand(AppendCommand(nil, []byte("SET"), []byte("a"), bigBytes(200<<10, 11)), []byte("SET"), []byte("b"), small)
	r := NewReader(&chunkReader{data: stream, sizes: []int{64 << 10}}, ReaderOptions{})
	first, _ := r.ReadCommand()
	p := &first[2][0]
	r.Recycle()
	second, err := r.ReadCommand()
	if err != nil || !bytes.Equal(second[2], small) || &second[2][0] == p {
		t.Fatalf("a 32 KiB bulk reused a 200 KiB buffer (%v)", err)
	}
}
