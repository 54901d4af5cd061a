package node

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/shardis/shardis/internal/consistent"
)

func TestKeySlotMatchesConsistent(t *testing.T) {
	keys := []string{"", "a", "123456789", "foo", "{user1000}.following", "{}x", "a{b}c{d}", "{", "}{x}", "key:000000012345"}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		b := make([]byte, r.IntN(40))
		for j := range b {
			b[j] = byte(r.IntN(256))
		}
		keys = append(keys, string(b), "key:"+strconv.Itoa(i))
	}
	for _, k := range keys {
		if got, want := keySlot(k), consistent.KeySlot(k); got != want {
			t.Fatalf("keySlot(%q) = %d, want %d", k, got, want)
		}
	}
	if crc16("123456789") != 0x31C3 {
		t.Fatalf("crc16 check value = %#x", crc16("123456789"))
	}
}

func BenchmarkKeySlot(b *testing.B) {
	for i := 0; i < b.N; i++ {
		keySlot("key:000000012345")
	}
}

func BenchmarkKeySlotConsistent(b *testing.B) {
	for i := 0; i < b.N; i++ {
		consistent.KeySlot("key:000000012345")
	}
}
