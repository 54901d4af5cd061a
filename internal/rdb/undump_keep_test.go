package rdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// payloadOf wraps an RDB value body (type byte and encoding) in a DUMP
// footer.
func payloadOf(body []byte) []byte {
	p := binary.LittleEndian.AppendUint16(bytes.Clone(body), Version)
	return binary.LittleEndian.AppendUint64(p, Checksum(p))
}

// TestUndumpKeep: a raw string of at least keep bytes is the payload's
// own bytes (capacity cut at its end); shorter strings, LZF and integer
// encodings, other types and keep 0 are copied or decoded; bad payloads
// fail as with Undump.
func TestUndumpKeep(t *testing.T) {
	big := make([]byte, 100<<10)
	for i := range big {
		big[i] = byte(i*131 + i>>8)
	}
	raw := Dump(&Value{Kind: KindString, Str: big}, false, Limits{})
	v, err := UndumpKeep(raw, 32<<10)
	if err != nil || !bytes.Equal(v.Str, big) {
		t.Fatalf("raw string: %v", err)
	}
	off := len(raw) - 10 - len(big)
	if &v.Str[0] != &raw[off] || cap(v.Str) != len(big) {
		t.Fatalf("raw string of %d bytes was copied (cap %d)", len(big), cap(v.Str))
	}

	shared := func(p []byte, v *Value) bool {
		if len(v.Str) == 0 {
			return false
		}
		start := &v.Str[0]
		for i := range p {
			if &p[i] == start {
				return true
			}
		}
		return false
	}
	zeros := make([]byte, 100<<10) // compresses with LZF
	cases := []struct {
		name string
		p    []byte
		keep int
		want []byte
	}{
		{"keep 0", raw, 0, big},
		{"below keep", raw, len(big) + 1, big},
		{"lzf", Dump(&Value{Kind: KindString, Str: zeros}, true, Limits{}), 1, zeros},
		{"integer", Dump(&Value{Kind: KindString, Str: []byte("12345")}, true, Limits{}), 1, []byte("12345")},
		{"6-bit length", payloadOf(append([]byte{TypeString, 3}, "abc"...)), 1, []byte("abc")},
		{"32-bit length", payloadOf(append([]byte{TypeString, 0x80, 0, 0, 0, 3}, "abc"...)), 1, []byte("abc")},
	}
	for _, tc := range cases {
		v, err := UndumpKeep(tc.p, tc.keep)
		if err != nil || !bytes.Equal(v.Str, tc.want) {
			t.Fatalf("%s: %v", tc.name, err)
		}
		wantShared := tc.name == "6-bit length" || tc.name == "32-bit length"
		if shared(tc.p, v) != wantShared {
			t.Fatalf("%s: shares the payload %v, want %v", tc.name, !wantShared, wantShared)
		}
	}

	bad := bytes.Clone(raw)
	bad[off+5] ^= 1
	if _, err := UndumpKeep(bad, 1); !errors.Is(err, ErrBadPayload) {
		t.Fatalf("flipped byte: %v", err)
	}
	// A length claiming one byte more or less than the payload holds is
	// corrupt, not kept.
	for _, body := range [][]byte{
		append([]byte{TypeString, 4}, "abc"...),
		append([]byte{TypeString, 2}, "abc"...),
	} {
		if _, err := UndumpKeep(payloadOf(body), 1); err == nil || errors.Is(err, ErrBadPayload) {
			t.Fatalf("body %q: %v, want a format error", body, err)
		}
	}
	if _, err := UndumpKeep(raw[:9], 1); !errors.Is(err, ErrBadPayload) {
		t.Fatalf("short payload: %v", err)
	}
}

// BenchmarkUndumpBigString decodes a 50 MB raw string's payload, copied
// (Undump) and kept in the payload (UndumpKeep): the checksum pass is
// common to both.
func BenchmarkUndumpBigString(b *testing.B) {
	s := make([]byte, 50<<20)
	for i := range s {
		s[i] = byte(i*131 + i>>9)
	}
	p := Dump(&Value{Kind: KindString, Str: s}, false, Limits{})
	for _, keep := range []int{0, 32 << 10} {
		b.Run(map[int]string{0: "copy", 32 << 10: "keep"}[keep], func(b *testing.B) {
			b.SetBytes(int64(len(p)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := UndumpKeep(p, keep); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
