package bitops

import (
	"bytes"
	"errors"
	"math/bits"
	"strconv"
	"testing"

	"github.com/shardis/shardis/internal/node/strops"
)

func args(s string) [][]byte { return bytes.Fields([]byte(s)) }

func TestOffsetAndBits(t *testing.T) {
	for _, tc := range []struct {
		arg   string
		hash  int
		limit int64
		want  int64
		err   error
	}{
		{"7", 0, 10, 7, nil}, {"#2", 8, 10, 16, nil}, {"#2", 0, 10, 0, ErrOffset},
		{"-1", 0, 10, 0, ErrOffset}, {"80", 0, 10, 0, ErrOffset}, {"80", 0, 0, 80, nil}, {"x", 0, 0, 0, ErrOffset},
	} {
		got, err := ParseOffset([]byte(tc.arg), tc.hash, tc.limit)
		if got != tc.want || err != tc.err {
			t.Errorf("ParseOffset(%q, %d, %d) = %d, %v", tc.arg, tc.hash, tc.limit, got, err)
		}
	}
	if _, err := ParseBitValue([]byte("2")); err != ErrBitValue {
		t.Errorf("ParseBitValue(2): %v", err)
	}
	p, grown := Grow(nil, 9)
	if len(p) != 2 || !grown {
		t.Fatalf("Grow: %d %v", len(p), grown)
	}
	if old := SetBit(p, 9, 1); old != 0 || p[1] != 0x40 || GetBit(p, 9) != 1 || GetBit(p, 100) != 0 {
		t.Errorf("SetBit/GetBit: %x", p)
	}
	if _, grown := Grow(p, 15); grown {
		t.Error("Grow within the string reported growth")
	}
}

func TestCountAndPos(t *testing.T) {
	p := []byte("foobar")
	for _, tc := range []struct {
		opts string
		want int64
		err  error
	}{
		{"", 26, nil}, {"0 0", 4, nil}, {"1 1", 6, nil}, {"1 1 BYTE", 6, nil}, {"5 30 BIT", 17, nil},
		{"-1 -2", 0, nil}, {"0", 0, strops.ErrSyntax}, {"0 x", 0, strops.ErrNotInt}, {"0 1 FOO", 0, strops.ErrSyntax},
	} {
		got, err := Count(p, args(tc.opts))
		if got != tc.want || err != tc.err {
			t.Errorf("Count %q = %d, %v; want %d, %v", tc.opts, got, err, tc.want, tc.err)
		}
	}
	q := []byte{0xff, 0xf0, 0x00}
	for _, tc := range []struct {
		bit  byte
		opts string
		want int64
	}{
		{0, "", 12}, {1, "2", -1}, {1, "1 1", 8}, {0, "7 15 BIT", 12}, {0, "0 0", -1},
	} {
		got, err := Pos(q, tc.bit, args(tc.opts))
		if got != tc.want || err != nil {
			t.Errorf("Pos %d %q = %d, %v; want %d", tc.bit, tc.opts, got, err, tc.want)
		}
	}
	if got, _ := Pos([]byte{0xff}, 0, nil); got != 8 {
		t.Errorf("Pos 0 on all ones without end = %d, want 8", got)
	}
	if _, err := ParseBit([]byte("2")); err != ErrBitArg {
		t.Errorf("ParseBit(2): %v", err)
	}
}

func TestApply(t *testing.T) {
	a, b := []byte{0xf0, 0x0f}, []byte{0xff}
	for _, tc := range []struct {
		op   string
		srcs [][]byte
		want []byte
	}{
		{"AND", [][]byte{a, b}, []byte{0xf0, 0x00}},
		{"or", [][]byte{a, b, nil}, []byte{0xff, 0x0f}},
		{"XOR", [][]byte{a, b}, []byte{0x0f, 0x0f}},
		{"NOT", [][]byte{a}, []byte{0x0f, 0xf0}},
		{"AND", [][]byte{nil, nil}, nil},
	} {
		op, err := ParseOp([]byte(tc.op), len(tc.srcs))
		if err != nil {
			t.Fatal(err)
		}
		if got := Apply(op, tc.srcs); string(got) != string(tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("%s: %x, want %x", tc.op, got, tc.want)
		}
	}
	if _, err := ParseOp([]byte("NOT"), 2); err != ErrNotSingle {
		t.Errorf("NOT 2: %v", err)
	}
	if _, err := ParseOp([]byte("NAND"), 2); err != strops.ErrSyntax {
		t.Errorf("NAND: %v", err)
	}
}

func TestField(t *testing.T) {
	for _, tc := range []struct {
		opts string
		err  error
	}{
		{"GET i8", strops.ErrSyntax}, {"GET u64 0", ErrFieldType}, {"GET i65 0", ErrFieldType},
		{"OVERFLOW FOO", ErrOverflowType}, {"SET i8 0 x", strops.ErrNotInt}, {"GET i8 -1", ErrOffset},
	} {
		if _, err := ParseField(args(tc.opts), 0); !errors.Is(err, tc.err) {
			t.Errorf("%q: %v, want %v", tc.opts, err, tc.err)
		}
	}
	f, err := ParseField(args("SET u8 #1 255 INCRBY u8 8 10 OVERFLOW SAT INCRBY u8 8 300 OVERFLOW FAIL INCRBY i8 0 1 GET i8 8"), 0)
	if err != nil || f.ReadOnly || f.Highest != 15 {
		t.Fatalf("%+v, %v", f, err)
	}
	p, _ := Grow(nil, f.Highest)
	res, changes := f.Run(p, false)
	want := []FieldResult{{Value: 0}, {Value: 9}, {Value: 255}, {Value: 1}, {Value: -1}}
	if len(res) != len(want) || changes != 4 {
		t.Fatalf("res %+v changes %d", res, changes)
	}
	for i := range want {
		if res[i] != want[i] {
			t.Errorf("op %d: %+v, want %+v", i, res[i], want[i])
		}
	}
	g, _ := ParseField(args("OVERFLOW FAIL INCRBY i8 0 127"), 0)
	if res, n := g.Run(p, false); !res[0].Nil || n != 0 {
		t.Errorf("FAIL overflow: %+v %d", res, n)
	}
	r, _ := ParseField(args("GET u4 0 GET i64 4"), 0)
	if res, _ := r.Run(nil, false); !r.ReadOnly || res[0].Value != 0 || res[1].Value != 0 {
		t.Errorf("GET on nothing: %+v", res)
	}
}

// FuzzCount compares Count over the whole string with a bit count per byte.
func FuzzCount(f *testing.F) {
	f.Add([]byte("foobar"), int64(1), int64(-2), true)
	f.Fuzz(func(t *testing.T, p []byte, start, end int64, bit bool) {
		unit := "BYTE"
		if bit {
			unit = "BIT"
		}
		got, err := Count(p, [][]byte{[]byte(strconv.FormatInt(start, 10)), []byte(strconv.FormatInt(end, 10)), []byte(unit)})
		if err != nil {
			t.Fatal(err)
		}
		var want int64
		total := int64(len(p))
		if bit {
			total *= 8
		}
		from, to, empty := strops.ClampRange(start, end, total)
		if start < 0 && end < 0 && start > end {
			empty = true
		}
		for i := from; !empty && i <= to; i++ {
			if bit {
				want += int64(GetBit(p, i))
			} else {
				want += int64(bits.OnesCount8(p[i]))
			}
		}
		if got != want {
			t.Fatalf("Count(%x, %d, %d, %s) = %d, want %d", p, start, end, unit, got, want)
		}
	})
}
