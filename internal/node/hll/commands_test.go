package hll

import (
	"encoding/binary"
	"testing"
)

func TestAddAllAndDebug(t *testing.T) {
	b, updated, err := AddAll(nil, [][]byte{[]byte("a"), []byte("b"), []byte("a")}, 3000)
	if err != nil || updated != 3 || !IsSparse(b) {
		t.Fatalf("AddAll on a new value: updated %d, err %v", updated, err)
	}
	if _, updated, _ = AddAll(b, [][]byte{[]byte("a")}, 3000); updated != 0 {
		t.Errorf("re-adding changed %d registers", updated)
	}
	if r, _, changed, _ := Debug("ENCODING", b); r != Status("sparse") || changed {
		t.Errorf("ENCODING: %v %v", r, changed)
	}
	r, dense, changed, err := Debug("todense", b)
	if r != int64(1) || !changed || err != nil || IsSparse(dense) {
		t.Fatalf("TODENSE: %v %v %v", r, changed, err)
	}
	if r, _, changed, _ := Debug("todense", dense); r != int64(0) || changed {
		t.Errorf("TODENSE of a dense value: %v %v", r, changed)
	}
	r, _, changed, _ = Debug("GetReg", b)
	if regs, ok := r.([]uint8); !ok || len(regs) != Registers || !changed {
		t.Errorf("GETREG: %T %v", r, changed)
	}
	if s, _, _, err := Debug("decode", b); err != nil || s.(string) == "" {
		t.Errorf("DECODE: %v %v", s, err)
	}
	if _, _, _, err := Debug("Nope", b); err == nil || err.Error() != "ERR Unknown PFDEBUG subcommand 'Nope'" {
		t.Errorf("unknown subcommand: %v", err)
	}
}

// TestMergeDense checks the three-bytes-at-a-time merge against the
// register-by-register reading.
func TestMergeDense(t *testing.T) {
	b := New()
	for i := 0; i < 5000; i++ {
		b, _, _ = Add(b, []byte{byte(i), byte(i >> 8), 'x'}, 3000)
	}
	d, err := ToDense(b)
	if err != nil {
		t.Fatal(err)
	}
	var got, want [Registers]uint8
	if err := MergeInto(&got, d); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		want[i] = getReg(d[HeaderSize:], i)
	}
	if got != want {
		t.Fatal("dense merge differs from the registers")
	}
}

func BenchmarkMergeDense(b *testing.B) {
	v := New()
	for i := 0; i < 20000; i++ {
		v, _, _ = Add(v, []byte{byte(i), byte(i >> 8)}, 3000)
	}
	d, _ := ToDense(v)
	var regs [Registers]uint8
	for i := 0; i < b.N; i++ {
		MergeInto(&regs, d)
	}
}

// BenchmarkAddSparse adds elements to a sparse HyperLogLog of about
// 1,200 distinct elements (about 2.5 KB of code, below the default
// hll-sparse-max-bytes of 3000): the scan for the covering opcode
// dominates.
func BenchmarkAddSparse(b *testing.B) {
	var ele [8]byte
	base := New()
	for i := uint64(0); i < 1200; i++ {
		binary.LittleEndian.PutUint64(ele[:], i*0x9e3779b97f4a7c15)
		base, _, _ = Add(base, ele[:], 3000)
	}
	if !IsSparse(base) {
		b.Fatal("promoted")
	}
	b.ReportAllocs()
	b.ResetTimer()
	v := append([]byte(nil), base...)
	for i := 0; i < b.N; i++ {
		if i%256 == 0 {
			v = append(v[:0], base...)
		}
		binary.LittleEndian.PutUint64(ele[:], uint64(i)*0xbf58476d1ce4e5b9+1)
		v, _, _ = Add(v, ele[:], 3000)
	}
}
