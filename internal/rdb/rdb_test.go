package rdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
)

func TestChecksum(t *testing.T) {
	if got := Checksum([]byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("crc64 = %#x", got)
	}
	// Slicing-by-8 must agree with byte-at-a-time on every split.
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	want := uint64(0)
	for _, b := range data {
		want = crcTable[0][byte(want)^b] ^ (want >> 8)
	}
	for cut := 0; cut < 20; cut++ {
		if got := UpdateCRC(UpdateCRC(0, data[:cut]), data[cut:]); got != want {
			t.Fatalf("cut %d: %#x != %#x", cut, got, want)
		}
	}
}

func TestLZFRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	inputs := [][]byte{
		bytes.Repeat([]byte("a"), 1000),
		[]byte("hello hello hello hello hello hello world"),
		bytes.Repeat([]byte("abcdefgh"), 5000),
	}
	for i := 0; i < 200; i++ {
		n := r.IntN(3000) + 21
		b := make([]byte, n)
		alpha := r.IntN(20) + 1
		for j := range b {
			b[j] = byte('a' + r.IntN(alpha))
		}
		inputs = append(inputs, b)
	}
	compressed := 0
	for _, in := range inputs {
		c := LZFCompress(in, len(in)-4)
		if c == nil {
			continue
		}
		compressed++
		if len(c) > len(in)-4 {
			t.Fatalf("compressed size %d over limit", len(c))
		}
		out, err := LZFDecompress(c, len(in))
		if err != nil || !bytes.Equal(out, in) {
			t.Fatalf("round trip failed: %v", err)
		}
	}
	if compressed < 100 {
		t.Fatalf("only %d inputs compressed", compressed)
	}
	// Known stream: literal "abc" then a reference of length 6 at distance 3.
	out, err := LZFDecompress([]byte{2, 'a', 'b', 'c', 4 << 5, 2}, 9)
	if err != nil || string(out) != "abcabcabc" {
		t.Fatalf("decode: %q %v", out, err)
	}
	if _, err := LZFDecompress([]byte{0x20, 50}, 10); !errors.Is(err, ErrLZF) {
		t.Fatalf("bad reference accepted: %v", err)
	}
}

func TestListpackRoundTrip(t *testing.T) {
	elems := [][]byte{[]byte(""), []byte("0"), []byte("127"), []byte("128"), []byte("-1"), []byte("-4096"), []byte("4095"),
		[]byte("-4097"), []byte("32767"), []byte("-32768"), []byte("8388607"), []byte("-8388608"), []byte("2147483647"),
		[]byte("-2147483648"), []byte("9223372036854775807"), []byte("-9223372036854775808"), []byte("01"), []byte("+1"),
		[]byte("-0"), bytes.Repeat([]byte("x"), 63), bytes.Repeat([]byte("y"), 64), bytes.Repeat([]byte("z"), 4095),
		bytes.Repeat([]byte("w"), 4096), bytes.Repeat([]byte("v"), 70000)}
	lp := buildListpack(elems)
	got, err := listpackEntries(lp)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(elems) {
		t.Fatalf("%d elements, want %d", len(got), len(elems))
	}
	for i := range elems {
		if !bytes.Equal(got[i], elems[i]) {
			t.Fatalf("element %d: %q != %q", i, got[i], elems[i])
		}
	}
	// Every truncation is an error, never a panic.
	for cut := 0; cut < len(lp)-1; cut += 97 {
		if _, err := listpackEntries(lp[:cut]); err == nil {
			t.Fatalf("truncated listpack at %d accepted", cut)
		}
	}
}

func TestIntsetRoundTrip(t *testing.T) {
	for _, vals := range [][]int64{{1, 2, 3}, {-70000, 5}, {math.MinInt64, 0, math.MaxInt64}} {
		got, err := intsetEntries(buildIntset(vals))
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if string(got[i]) != strconv.FormatInt(v, 10) {
				t.Fatalf("%v: got %q", vals, got)
			}
		}
	}
}

func TestZiplistDecode(t *testing.T) {
	// A ziplist of "a", 12 (immediate), 300 (int16), "hello".
	var body []byte
	body = append(body, 0, 0x01, 'a')
	body = append(body, 3, 0xfd)          // 12 -> 0xf1 + 12 = 0xfd
	body = append(body, 2, 0xc0, 0x2c, 1) // 300 int16
	body = append(body, 4, 0x05, 'h', 'e', 'l', 'l', 'o')
	zl := make([]byte, 10)
	zl = append(zl, body...)
	zl = append(zl, 0xff)
	zl[0] = byte(len(zl))
	zl[8] = 4
	got, err := ziplistEntries(zl)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "12", "300", "hello"}
	for i, w := range want {
		if string(got[i]) != w {
			t.Fatalf("got %q", got)
		}
	}
}

func sample() []*Value {
	big := make([][]byte, 3000)
	for i := range big {
		big[i] = []byte(fmt.Sprintf("element-%d-%s", i, bytes.Repeat([]byte("p"), i%50)))
	}
	var zbig []ZMember
	var hbig []HashField
	for i := 0; i < 300; i++ {
		zbig = append(zbig, ZMember{[]byte(fmt.Sprintf("m%d", i)), float64(i) * 1.5})
		hbig = append(hbig, HashField{[]byte(fmt.Sprintf("f%d", i)), bytes.Repeat([]byte("v"), i)})
	}
	return []*Value{
		{Kind: KindString, Str: []byte("hello")},
		{Kind: KindString, Str: []byte("12345")},
		{Kind: KindString, Str: []byte("-2147483649")},
		{Kind: KindString, Str: bytes.Repeat([]byte("compress me "), 100)},
		{Kind: KindString, Str: []byte{}},
		{Kind: KindList, Elems: [][]byte{[]byte("a"), []byte("1"), []byte("b")}},
		{Kind: KindList, Elems: big},
		{Kind: KindSet, Elems: [][]byte{[]byte("1"), []byte("-5"), []byte("100000")}},
		{Kind: KindSet, Elems: [][]byte{[]byte("x"), []byte("y")}},
		{Kind: KindZSet, ZSet: []ZMember{{[]byte("a"), 1}, {[]byte("b"), 2.5}, {[]byte("c"), math.Inf(-1)}, {[]byte("d"), 0.1}}},
		{Kind: KindZSet, ZSet: zbig},
		{Kind: KindHash, Hash: []HashField{{[]byte("f"), []byte("v")}, {[]byte("n"), []byte("42")}}},
		{Kind: KindHash, Hash: hbig},
	}
}

func normalize(v *Value) *Value {
	c := *v
	if c.Kind == KindZSet {
		c.ZSet = append([]ZMember(nil), v.ZSet...)
		sortZSet(c.ZSet)
	}
	if c.Kind == KindSet {
		m := map[string]bool{}
		for _, e := range v.Elems {
			m[string(e)] = true
		}
		c.Elems = nil
		for k := range m {
			c.Elems = append(c.Elems, []byte(k))
		}
		sortBytes(c.Elems)
	}
	return &c
}

func sortBytes(b [][]byte) {
	for i := 1; i < len(b); i++ {
		for j := i; j > 0 && bytes.Compare(b[j-1], b[j]) > 0; j-- {
			b[j-1], b[j] = b[j], b[j-1]
		}
	}
}

func TestFileRoundTrip(t *testing.T) {
	for _, opt := range []Options{{Compress: true, Checksum: true}, {}} {
		var buf bytes.Buffer
		e := NewEncoder(&buf, opt)
		e.Header()
		e.Aux("redis-ver", "7.0.15")
		e.Aux("redis-bits", "64")
		e.SelectDB(0)
		e.ResizeDB(uint64(len(sample())), 1)
		for i, v := range sample() {
			meta := KeyMeta{Idle: -1, Freq: -1}
			if i == 0 {
				meta.ExpireMs = 1893456000000
			}
			e.Key([]byte(fmt.Sprintf("k%d", i)), meta, v)
		}
		e.SelectDB(3)
		e.Key([]byte("other"), KeyMeta{Idle: 10, Freq: -1}, &Value{Kind: KindString, Str: []byte("x")})
		if err := e.Finish(); err != nil {
			t.Fatal(err)
		}
		data := buf.Bytes()
		var got []Entry
		aux := map[string]string{}
		ver, err := Parse(bytes.NewReader(data), Handler{
			Aux: func(k, v []byte) error { aux[string(k)] = string(v); return nil },
			Key: func(en *Entry) error { got = append(got, *en); return nil },
		})
		if err != nil || ver != 10 {
			t.Fatalf("parse: %v %d", err, ver)
		}
		if aux["redis-ver"] != "7.0.15" || aux["redis-bits"] != "64" {
			t.Fatalf("aux %v", aux)
		}
		if len(got) != len(sample())+1 {
			t.Fatalf("%d keys", len(got))
		}
		for i, v := range sample() {
			if !reflect.DeepEqual(normalize(got[i].Value), normalize(v)) {
				t.Fatalf("key %d (%v): value differs", i, v.Kind)
			}
		}
		if got[0].ExpireMs != 1893456000000 || got[1].ExpireMs != 0 {
			t.Fatalf("expiry %d", got[0].ExpireMs)
		}
		last := got[len(got)-1]
		if last.DB != 3 || last.Idle != 10 || string(last.Value.Str) != "x" {
			t.Fatalf("last %+v", last)
		}
		if opt.Checksum {
			bad := bytes.Clone(data)
			bad[len(bad)/2] ^= 1
			if _, err := Parse(bytes.NewReader(bad), Handler{}); err == nil {
				t.Fatal("flipped bit accepted")
			}
		}
		for cut := 0; cut < len(data)-1; cut += len(data)/50 + 1 {
			if _, err := Parse(bytes.NewReader(data[:cut]), Handler{}); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("truncated at %d: %v", cut, err)
			}
		}
	}
}

func TestDumpPayload(t *testing.T) {
	for _, v := range sample() {
		p := Dump(v, true, Limits{})
		got, err := Undump(p)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(normalize(got), normalize(v)) {
			t.Fatalf("dump round trip differs for %v", v.Kind)
		}
		p[0] ^= 0x10
		if _, err := Undump(p); !errors.Is(err, ErrBadPayload) {
			t.Fatalf("corrupt payload: %v", err)
		}
	}
	// Redis 7.0: DUMP of the string "hello".
	want := []byte("\x00\x05hello\x0a\x00")
	p := Dump(&Value{Kind: KindString, Str: []byte("hello")}, true, Limits{})
	if !bytes.Equal(p[:len(p)-8], want) {
		t.Fatalf("payload %q", p)
	}
}

func TestUnsupportedType(t *testing.T) {
	d := NewDecoder(bytes.NewReader(nil))
	_, err := d.ReadValue(TypeModule2)
	var ut *UnsupportedTypeError
	if !errors.As(err, &ut) || ut.Error() != "rdb: unsupported value type 7 (module)" {
		t.Fatalf("%v", err)
	}
}

// A string longer than several copy steps (and not a multiple of one)
// round-trips through DUMP and RESTORE's decoding, which checks the
// checksum once, over the whole payload: a flipped byte anywhere in the
// string is refused, and so is a payload cut short.
func TestUndumpBigString(t *testing.T) {
	s := make([]byte, 3*copyStep+12345)
	x := uint32(1)
	for i := range s {
		x = x*1664525 + 1013904223
		s[i] = byte(x >> 24)
	}
	p := Dump(&Value{Kind: KindString, Str: s}, true, Limits{})
	got, err := Undump(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Str, s) {
		t.Fatal("big string round trip differs")
	}
	for _, pos := range []int{10, copyStep + 1, len(p) - 11} {
		q := bytes.Clone(p)
		q[pos] ^= 0x01
		if _, err := Undump(q); !errors.Is(err, ErrBadPayload) {
			t.Fatalf("byte %d flipped: %v", pos, err)
		}
	}
	// A payload cut inside the string, with a footer recomputed for it:
	// the checksum matches, the string's length claims more than is left.
	cut := p[:2*copyStep]
	cut = binary.LittleEndian.AppendUint16(cut[:len(cut):len(cut)], Version)
	cut = binary.LittleEndian.AppendUint64(cut, Checksum(cut))
	if _, err := Undump(cut); err == nil || errors.Is(err, ErrBadPayload) {
		t.Fatalf("cut payload: %v", err)
	}
}

// DumpString's parts join to Dump's payload for every kind of string:
// integer-like, short, compressible and incompressible, with and without
// compression; the raw case references the string.
func TestDumpStringParts(t *testing.T) {
	random := make([]byte, 300<<10)
	for i := range random {
		random[i] = byte(i*7919 ^ i>>3 ^ i*i>>11)
	}
	rep := bytes.Repeat([]byte("abcdefgh"), 40<<10)
	for _, s := range [][]byte{[]byte("12345"), []byte("-7"), []byte("short str"), []byte("twelve bytes!!"), []byte("a string of more than twenty bytes"), rep, random} {
		for _, compress := range []bool{false, true} {
			d := DumpString(s, compress)
			want := Dump(&Value{Kind: KindString, Str: s}, compress, DefaultLimits)
			if got := bytes.Join([][]byte{d.Head, d.Body, d.Tail}, nil); !bytes.Equal(got, want) {
				t.Fatalf("%d bytes, compress %v: parts join to %d bytes, Dump gives %d", len(s), compress, len(got), len(want))
			}
			if d.Body != nil && &d.Body[0] != &s[0] {
				t.Fatalf("%d bytes: the body is a copy", len(s))
			}
			if _, err := Undump(want); err != nil {
				t.Fatal(err)
			}
		}
	}
	if d := DumpString(random, true); d.Body == nil {
		t.Fatal("an incompressible string is not sent from where it is")
	}
	if d := DumpString(rep, true); d.Body != nil {
		t.Fatal("a compressible string is not LZF-encoded")
	}
}
