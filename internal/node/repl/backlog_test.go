package repl

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestBacklog writes a stream through a small ring and checks every
// offset a replica could ask for against a model (the whole stream),
// across wrap-arounds, a write larger than the ring, and resizes that
// grow and shrink it.
func TestBacklog(t *testing.T) {
	var stream []byte
	b := NewBacklog(16)
	offset := int64(0)
	hist := 0 // the history the ring must hold
	write := func(p string) {
		stream = append(stream, p...)
		offset += int64(len(p))
		b.Write([]byte(p))
		hist = min(hist+len(p), b.Size())
	}
	resize := func(n int) {
		b.Resize(n)
		hist = min(hist, n)
	}
	check := func(step string) {
		t.Helper()
		first := offset - int64(b.Histlen()) + 1
		if b.Histlen() != hist {
			t.Fatalf("%s: histlen %d, want %d", step, b.Histlen(), hist)
		}
		for off := int64(0); off <= offset+2; off++ {
			got, ok := b.From(off, offset)
			if want := off >= first && off <= offset+1; ok != want {
				t.Fatalf("%s: From(%d) ok=%v, want %v (first %d, offset %d)", step, off, ok, want, first, offset)
			}
			if ok && !bytes.Equal(got, stream[off-1:]) {
				t.Fatalf("%s: From(%d) = %q, want %q", step, off, got, stream[off-1:])
			}
		}
	}
	write("hello")
	check("first write")
	write("-world-and-more")
	check("wrapped")
	write(strings.Repeat("x", 40) + "tail")
	check("larger than the ring")
	resize(64)
	check("grown")
	write("0123456789")
	check("written after growing")
	resize(8)
	check("shrunk")
	write("abc")
	check("written after shrinking")
	var none *Backlog
	if _, ok := none.From(1, 0); ok || none.Histlen() != 0 {
		t.Fatal("a nil backlog holds history")
	}
}

func TestRDBInfo(t *testing.T) {
	id := strings.Repeat("c", 40)
	in := NewRDBInfo()
	in.Aux([]byte("repl-id"), []byte(id))
	in.Aux([]byte("repl-offset"), []byte("123"))
	if in.Complete() {
		t.Fatal("complete without repl-stream-db")
	}
	in.Aux([]byte("repl-stream-db"), []byte("3"))
	in.Aux([]byte("redis-ver"), []byte("7.0.15"))
	if !in.Complete() || in.ID != id || in.Offset != 123 || in.StreamDB != 3 {
		t.Fatalf("%+v", in)
	}
	bad := NewRDBInfo()
	bad.Aux([]byte("repl-id"), []byte("short"))
	bad.Aux([]byte("repl-offset"), []byte("x"))
	bad.Aux([]byte("repl-stream-db"), []byte("0"))
	if bad.Complete() {
		t.Fatalf("malformed fields accepted: %+v", bad)
	}
	var got RDBInfo = NewRDBInfo()
	for _, kv := range AuxFields(3, id, 123) {
		got.Aux([]byte(kv[0]), []byte(kv[1]))
	}
	if got != in {
		t.Fatalf("AuxFields round trip: %+v, want %+v", got, in)
	}
}

// TestPayloadForms: both forms of a full sync's payload read back, the
// EOF form through the replica's reader, leaving the stream after it.
func TestPayloadForms(t *testing.T) {
	data := bytes.Repeat([]byte("rdb-bytes-"), 20000) // over 64 kB: several chunks
	write := func(w io.Writer) error { _, err := w.Write(data); return err }
	var lenForm bytes.Buffer
	if err := WritePayload(&lenForm, write); err != nil {
		t.Fatal(err)
	}
	if want := "$200000\r\n"; !bytes.HasPrefix(lenForm.Bytes(), []byte(want)) || !bytes.Equal(lenForm.Bytes()[len(want):], data) {
		t.Fatalf("length form: %q...", lenForm.Bytes()[:20])
	}
	var eof bytes.Buffer
	if err := WritePayloadEOF(&eof, write); err != nil {
		t.Fatal(err)
	}
	eof.WriteString("+stream")
	br := bufio.NewReader(&eof)
	hdr, _ := br.ReadString('\n')
	if !strings.HasPrefix(hdr, "$EOF:") || len(hdr) != 5+40+2 {
		t.Fatalf("EOF header %q", hdr)
	}
	got, err := io.ReadAll(&eofReader{r: br, mark: []byte(hdr[5:45])})
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("EOF form read back %d bytes (%v), want %d", len(got), err, len(data))
	}
	if rest, _ := io.ReadAll(br); string(rest) != "+stream" {
		t.Fatalf("after the mark: %q", rest)
	}
	failing := errors.New("encoder failed")
	if err := WritePayloadEOF(io.Discard, func(io.Writer) error { return failing }); !errors.Is(err, failing) {
		t.Fatalf("encoder error: %v", err)
	}
}
