package resp

import (
	"bytes"
	"testing"
)

// TestReprSplitArgsRoundTrip: every byte value quoted by Repr reads back
// through SplitArgs as itself.
func TestReprSplitArgsRoundTrip(t *testing.T) {
	var all []byte
	for i := 0; i < 256; i++ {
		all = append(all, byte(i))
	}
	for _, in := range [][]byte{nil, []byte("plain"), []byte(`a "b" \c`), all} {
		q := Repr(in)
		out, ok := SplitArgs([]byte(q))
		if !ok || len(out) != 1 || !bytes.Equal(out[0], in) {
			t.Fatalf("Repr(%q) = %s reads back as %q (ok %v)", in, q, out, ok)
		}
	}
	if got := Repr([]byte("a\n\x01")); got != `"a\n\x01"` {
		t.Fatalf("Repr = %s", got)
	}
}
