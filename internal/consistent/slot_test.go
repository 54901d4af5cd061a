package consistent

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestCRC16(t *testing.T) {
	// The check value of CRC-16/XMODEM, also quoted in the Redis Cluster
	// specification.
	if got := CRC16("123456789"); got != 0x31C3 {
		t.Fatalf("CRC16(123456789) = %#x, want 0x31c3", got)
	}
	if got := CRC16(""); got != 0 {
		t.Fatalf("CRC16(\"\") = %#x, want 0", got)
	}
}

func TestKeySlot(t *testing.T) {
	// Values as CLUSTER KEYSLOT returns them on a real Redis.
	tests := []struct {
		key  string
		want int
	}{
		{"foo", 12182},
		{"bar", 5061},
		{"hello", 866},
		{"", 0},
		{"123456789", 0x31C3},
		{"{user1000}.following", KeySlot("user1000")},
		{"foo{}{bar}", KeySlot("foo{}{bar}")},
		{"{bar", KeySlot("{bar")},
	}
	for _, tt := range tests {
		if got := KeySlot(tt.key); got != tt.want {
			t.Errorf("KeySlot(%q) = %d, want %d", tt.key, got, tt.want)
		}
	}
	if KeySlot("{user1000}.following") != KeySlot("{user1000}.followers") {
		t.Error("{user1000}.following and {user1000}.followers are in different slots")
	}
}

func TestHashTag(t *testing.T) {
	tests := []struct{ key, want string }{
		{"foo", "foo"},
		{"{user1000}.following", "user1000"},
		{"foo{}{bar}", "foo{}{bar}"}, // first '{' has an empty tag: whole key
		{"foo{{bar}}zap", "{bar"},
		{"foo{bar}{zap}", "bar"},
		{"{bar", "{bar"},
		{"bar}", "bar}"},
		{"}{x}", "x"},
		{"{\n}", "\n"}, // unlike Jedis, any byte counts
		{"{}", "{}"},
	}
	for _, tt := range tests {
		if got := HashTag(tt.key); got != tt.want {
			t.Errorf("HashTag(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

func TestKeySlotRange(t *testing.T) {
	seen := make(map[int]bool)
	for i := range 100_000 {
		s := KeySlot("key:" + strconv.Itoa(i))
		if s < 0 || s >= SlotCount {
			t.Fatalf("slot %d out of range", s)
		}
		seen[s] = true
	}
	if len(seen) < SlotCount*95/100 {
		t.Fatalf("only %d distinct slots over 100k keys", len(seen))
	}
}

func BenchmarkKeySlot(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = KeySlot("{user1000}.following")
	}
}

// crc16Bitwise is the textbook bit-at-a-time CRC-16/XMODEM, the reference
// for the table-driven CRC16.
func crc16Bitwise(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

func TestCRC16MatchesBitwise(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		b := make([]byte, r.IntN(40))
		for j := range b {
			b[j] = byte(r.IntN(256))
		}
		if got, want := CRC16(string(b)), crc16Bitwise(string(b)); got != want {
			t.Fatalf("CRC16(%q) = %#x, want %#x", b, got, want)
		}
	}
}

func TestSlotRanges(t *testing.T) {
	for _, tc := range []struct {
		slots []int
		want  string
	}{
		{nil, ""},
		{[]int{7}, "7"},
		{[]int{0, 1, 2, 5, 7, 8}, "0-2,5,7-8"},
		{[]int{0, 5460, 5462, 5463, 16383}, "0,5460,5462-5463,16383"},
	} {
		if got := SlotRanges(tc.slots); got != tc.want {
			t.Errorf("SlotRanges(%v) = %q, want %q", tc.slots, got, tc.want)
		}
	}
}
