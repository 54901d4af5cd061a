package rdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"runtime"
	"testing"
)

// payload wraps a value body (type byte, then the value) in a DUMP
// payload's footer: RDB version and CRC64.
func payload(body []byte) []byte {
	p := append([]byte{}, body...)
	p = binary.LittleEndian.AppendUint16(p, Version)
	return binary.LittleEndian.AppendUint64(p, Checksum(p))
}

// FuzzDecode feeds RESTORE payloads, which are untrusted input, to the
// value decoder: the fuzzed bytes get a valid footer, so the decoder
// itself is exercised rather than the checksum. It must never panic;
// what it accepts must survive a DUMP/RESTORE round trip.
//
//	go test ./internal/rdb -run '^$' -fuzz FuzzDecode -fuzztime 60s
func FuzzDecode(f *testing.F) {
	small := []*Value{
		{Kind: KindString, Str: []byte("hello")},
		{Kind: KindString, Str: []byte("12345")},
		{Kind: KindString, Str: bytes.Repeat([]byte("abc"), 40)}, // LZF
		{Kind: KindList, Elems: [][]byte{[]byte("a"), []byte("17"), []byte("-3000")}},
		{Kind: KindSet, Elems: [][]byte{[]byte("1"), []byte("2"), []byte("70000")}},
		{Kind: KindSet, Elems: [][]byte{[]byte("x"), []byte("y")}},
		{Kind: KindZSet, ZSet: []ZMember{{[]byte("a"), 1.5}, {[]byte("b"), -2}}},
		{Kind: KindHash, Hash: []HashField{{[]byte("f"), []byte("v")}, {[]byte("n"), []byte("42")}}},
		{Kind: KindStream, Stream: &Stream{
			Nodes: []StreamNode{{Master: StreamID{1, 1}, Elems: [][]byte{
				[]byte("1"), []byte("0"), []byte("1"), []byte("f"), []byte("0"),
				[]byte("2"), []byte("0"), []byte("0"), []byte("v"), []byte("4"),
			}}},
			Length: 1, LastID: StreamID{1, 1}, FirstID: StreamID{1, 1}, EntriesAdded: 1, V2: true,
			Groups: []StreamGroup{{Name: []byte("g"), LastID: StreamID{1, 1}, EntriesRead: 1,
				PEL:       []StreamNACK{{ID: StreamID{1, 1}, DeliveryTime: 5, DeliveryCount: 1}},
				Consumers: []StreamConsumer{{Name: []byte("c"), SeenTime: 5, PEL: []StreamID{{1, 1}}}}}},
		}},
	}
	plain := Limits{ListNodeBytes: 8192} // no compact encodings: the plain types
	for _, v := range small {
		for _, lim := range []Limits{DefaultLimits, plain} {
			p := Dump(v, true, lim)
			f.Add(p[:len(p)-10])
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		v, err := Undump(payload(body))
		if err != nil {
			var ut *UnsupportedTypeError
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrBadPayload) && !errors.Is(err, ErrLZF) && !errors.As(err, &ut) {
				t.Fatalf("error of unexpected kind: %v", err)
			}
			return
		}
		again, err := Undump(Dump(v, true, Limits{}))
		if err != nil {
			t.Fatalf("re-dump of an accepted value does not load: %v", err)
		}
		if !reflect.DeepEqual(canonical(again), canonical(v)) {
			t.Fatalf("round trip differs: %+v vs %+v", v, again)
		}
	})
}

// canonical is normalize with empty slices as nil, so that values that
// differ only in how an empty part is held compare equal.
func canonical(v *Value) *Value {
	c := normalize(v)
	if len(c.Str) == 0 {
		c.Str = nil
	}
	if len(c.Elems) == 0 {
		c.Elems = nil
	}
	for i, e := range c.Elems {
		if len(e) == 0 {
			c.Elems[i] = nil
		}
	}
	if len(c.ZSet) == 0 {
		c.ZSet = nil
	}
	for i := range c.ZSet {
		if len(c.ZSet[i].Member) == 0 {
			c.ZSet[i].Member = nil
		}
	}
	if len(c.Hash) == 0 {
		c.Hash = nil
	}
	if c.Stream != nil {
		// A type 15 value is written back as type 19.
		st := *c.Stream
		st.V2 = true
		c.Stream = &st
	}
	for i := range c.Hash {
		if len(c.Hash[i].Field) == 0 {
			c.Hash[i].Field = nil
		}
		if len(c.Hash[i].Value) == 0 {
			c.Hash[i].Value = nil
		}
	}
	return c
}

// TestUndumpLengthsCappedByPayload: a few bytes that declare a huge
// string, LZF expansion or element count are refused as corrupt without
// allocating for what they declare.
func TestUndumpLengthsCappedByPayload(t *testing.T) {
	lenField := func(n uint32) []byte { return binary.BigEndian.AppendUint32([]byte{0x80}, n) }
	cases := map[string][]byte{
		"string of 400mb":         append([]byte{TypeString}, lenField(400<<20)...),
		"LZF to 4gb":              append(append(append([]byte{TypeString, 0xc3}, 0x02), lenField(4<<30-1)...), 0x00, 'a'),
		"LZF beyond its input":    append(append([]byte{TypeString, 0xc3}, lenField(300<<20)...), 0x05),
		"list of 100M elements":   append([]byte{TypeList}, lenField(100_000_000)...),
		"set of 100M elements":    append([]byte{TypeSet}, lenField(100_000_000)...),
		"zset of 100M members":    append([]byte{TypeZSet2}, lenField(100_000_000)...),
		"hash of 100M fields":     append([]byte{TypeHash}, lenField(100_000_000)...),
		"quicklist of 100M nodes": append([]byte{TypeListQuicklist2}, lenField(100_000_000)...),
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			p := payload(body)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := Undump(p)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Undump: %v, want ErrCorrupt", err)
			}
			if grown := after.TotalAlloc - before.TotalAlloc; grown > 1<<20 {
				t.Fatalf("a %d-byte payload allocated %d bytes", len(p), grown)
			}
		})
	}
}

// TestLZFExpansionBound: the longest back reference is what the decoder's
// bound allows, and the bound is not lower than what LZF can produce.
func TestLZFExpansionBound(t *testing.T) {
	// A literal 'a', then back references of 264 bytes each to the byte
	// before: 1 + 2 + 3k compressed bytes expand to 1 + 264k.
	in := []byte{0x00, 'a'}
	for range 10 {
		in = append(in, 0xe0, 255, 0x00)
	}
	out, err := LZFDecompress(in, 1+264*10)
	if err != nil {
		t.Fatal(err)
	}
	if got := float64(len(out)) / float64(len(in)); got > lzfMaxExpansion {
		t.Fatalf("%d bytes expand to %d: ratio %.1f above the bound %d", len(in), len(out), got, lzfMaxExpansion)
	}
	// Through a payload: accepted.
	body := append([]byte{TypeString, 0xc3}, byte(len(in)))
	body = append(body, 0x40|byte((len(out)>>8)&0x3f)) // 14-bit length
	body = append(body, byte(len(out)))
	body = append(body, in...)
	v, err := Undump(payload(body))
	if err != nil || !bytes.Equal(v.Str, out) {
		t.Fatalf("maximal LZF string refused: %v", err)
	}
}
