package node

import (
	"math/bits"
	"math/rand/v2"
	"testing"
)

func TestBitops(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	t.Run("SETBIT/GETBIT", func(t *testing.T) {
		r.expect("SETBIT b 7 1\r\n", ":0")
		r.expect("SETBIT b 7 1\r\n", ":1")
		expectLines(t, r, "GET b\r\n", "$1", "\x01")
		r.expect("GETBIT b 7\r\n", ":1")
		r.expect("GETBIT b 6\r\n", ":0")
		r.expect("GETBIT b 1000\r\n", ":0")
		r.expect("GETBIT nope 0\r\n", ":0")
		r.expect("SETBIT b 1 2\r\n", "-ERR bit is not an integer or out of range")
		r.expect("SETBIT b -1 1\r\n", "-ERR bit offset is not an integer or out of range")
		r.expect("SETBIT b 4294967296 1\r\n", "-ERR bit offset is not an integer or out of range")
		r.expect("LPUSH l x\r\n", ":1")
		r.expect("SETBIT l 0 1\r\n", "-"+errWrongType)
	})
	t.Run("BITCOUNT", func(t *testing.T) {
		r.expect("SET s foobar\r\n", "+OK")
		r.expect("BITCOUNT s\r\n", ":26")
		r.expect("BITCOUNT s 0 0\r\n", ":4")
		r.expect("BITCOUNT s 1 1\r\n", ":6")
		r.expect("BITCOUNT s 1 1 BYTE\r\n", ":6")
		r.expect("BITCOUNT s 5 30 BIT\r\n", ":17")
		r.expect("BITCOUNT s -1 -2\r\n", ":0")
		r.expect("BITCOUNT s 0\r\n", "-ERR syntax error")
		r.expect("BITCOUNT s 0 1 FOO\r\n", "-ERR syntax error")
		r.expect("BITCOUNT nope\r\n", ":0")
	})
	t.Run("BITPOS", func(t *testing.T) {
		r.expect("SET p \"\\xff\\xf0\\x00\"\r\n", "+OK")
		r.expect("BITPOS p 0\r\n", ":12")
		r.expect("SET p \"\\x00\\xff\\xf0\"\r\n", "+OK")
		r.expect("BITPOS p 1 0\r\n", ":8")
		r.expect("BITPOS p 1 2\r\n", ":16")
		r.expect("SET p \"\\x00\\x00\\x00\"\r\n", "+OK")
		r.expect("BITPOS p 1\r\n", ":-1")
		r.expect("SET p \"\\xff\\xff\\xff\"\r\n", "+OK")
		r.expect("BITPOS p 0\r\n", ":24")
		r.expect("BITPOS p 0 0\r\n", ":24")
		r.expect("BITPOS p 0 0 -1\r\n", ":-1") // an explicit end stops the padding
		r.expect("BITPOS p 0 7 15 BIT\r\n", ":-1")
		r.expect("BITPOS nope 0\r\n", ":0")
		r.expect("BITPOS nope 1\r\n", ":-1")
		r.expect("BITPOS p 2\r\n", "-ERR The bit argument must be 1 or 0.")
		r.expect("SET e \"\"\r\n", "+OK")
		r.expect("BITPOS e 0\r\n", ":-1")
	})
	t.Run("BITOP", func(t *testing.T) {
		r.expect("SET x \"\\xf0\\x0f\"\r\n", "+OK")
		r.expect("SET y \"\\xff\"\r\n", "+OK")
		r.expect("BITOP AND d x y\r\n", ":2")
		expectLines(t, r, "GET d\r\n", "$2", "\xf0\x00")
		r.expect("BITOP OR d x y\r\n", ":2")
		expectLines(t, r, "GET d\r\n", "$2", "\xff\x0f")
		r.expect("BITOP XOR d x y\r\n", ":2")
		expectLines(t, r, "GET d\r\n", "$2", "\x0f\x0f")
		r.expect("BITOP NOT d y\r\n", ":1")
		expectLines(t, r, "GET d\r\n", "$1", "\x00")
		r.expect("BITOP NOT d x y\r\n", "-ERR BITOP NOT must be called with a single source key.")
		r.expect("BITOP FOO d x\r\n", "-ERR syntax error")
		r.expect("BITOP AND d x l\r\n", "-"+errWrongType)
		r.expect("BITOP OR d nope nope2\r\n", ":0")
		r.expect("EXISTS d\r\n", ":0")
	})
	t.Run("BITFIELD", func(t *testing.T) {
		expectLines(t, r, "BITFIELD bf SET u8 0 255 GET u8 0 INCRBY u8 0 10\r\n", "*3", ":0", ":255", ":9")
		expectLines(t, r, "BITFIELD bf OVERFLOW SAT INCRBY u8 0 1000 OVERFLOW FAIL INCRBY u8 0 1\r\n", "*2", ":255", "$-1")
		expectLines(t, r, "BITFIELD bf SET i8 #1 -100 INCRBY i8 #1 -100 OVERFLOW SAT INCRBY i8 #1 -100\r\n", "*3", ":0", ":56", ":-44")
		expectLines(t, r, "BITFIELD_RO bf GET u8 0\r\n", "*1", ":255")
		r.expect("BITFIELD_RO bf SET u8 0 1\r\n", "-ERR BITFIELD_RO only supports the GET subcommand")
		r.expect("BITFIELD bf SET u64 0 1\r\n", "-ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.")
		r.expect("BITFIELD bf OVERFLOW FOO\r\n", "-ERR Invalid OVERFLOW type specified")
		r.expect("BITFIELD bf GET u8\r\n", "-ERR syntax error")
		r.expect("BITFIELD bf\r\n", "*0")
		expectLines(t, r, "BITFIELD nope GET i16 0\r\n", "*1", ":0")
		r.expect("EXISTS nope\r\n", ":0")
	})
}

// TestBitcountFuzz compares BITCOUNT and BITPOS with a straightforward
// bit-by-bit model over random strings and ranges.
func TestBitcountFuzz(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 200; iter++ {
		buf := make([]byte, rng.IntN(40))
		for i := range buf {
			switch rng.IntN(3) {
			case 0:
				buf[i] = 0
			case 1:
				buf[i] = 0xff
			default:
				buf[i] = byte(rng.IntN(256))
			}
		}
		rc.Set(c, "f", buf, 0)
		nbits := int64(len(buf)) * 8
		start, end := rng.Int64N(nbits+10)-5, rng.Int64N(nbits+10)-5
		// Model.
		bit := func(i int64) int64 { return int64(buf[i>>3]>>(7-uint(i&7))) & 1 }
		norm := func(s, e, total int64) (int64, int64) {
			if s < 0 {
				s += total
			}
			if e < 0 {
				e += total
			}
			s, e = max(s, 0), max(e, 0)
			return s, min(e, total-1)
		}
		s, e := norm(start, end, nbits)
		var want int64
		if !(start < 0 && end < 0 && start > end) {
			for i := s; i <= e; i++ {
				want += bit(i)
			}
		}
		if got, _ := rc.Do(c, "BITCOUNT", "f", start, end, "BIT").Int64(); got != want {
			t.Fatalf("BITCOUNT %x %d %d BIT = %d, want %d", buf, start, end, got, want)
		}
		full := int64(0)
		for _, b := range buf {
			full += int64(bits.OnesCount8(b))
		}
		if got := rc.BitCount(c, "f", nil).Val(); got != full {
			t.Fatalf("BITCOUNT %x = %d, want %d", buf, got, full)
		}
		for _, b := range []int64{0, 1} {
			wantPos := int64(-1)
			for i := s; i <= e; i++ {
				if bit(i) == b {
					wantPos = i
					break
				}
			}
			if s > e {
				wantPos = -1
			}
			got := rc.BitPosSpan(c, "f", int8(b), start, end, "bit").Val()
			if got != wantPos {
				t.Fatalf("BITPOS %x %d %d %d BIT = %d, want %d", buf, b, start, end, got, wantPos)
			}
		}
	}
}
