package consistent

import "strconv"

// SlotCount is the number of Redis Cluster hash slots.
const SlotCount = 16384

// crcTables[k][b] is the CRC-16/XMODEM (polynomial 0x1021, initial value
// 0, no reflection: the CRC Redis Cluster uses for key slots) register
// contribution of byte b followed by k zero bytes; crcTables[0] is the
// usual byte table. With them CRC16 consumes 8 bytes per step (slicing by
// 8): the byte-at-a-time loop's chain of dependent table loads cost ~3 ns
// per key byte, and the node computes a slot for every key it looks up.
var crcTables = func() (t [8][256]uint16) {
	for i := range 256 {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[0][i] = c
	}
	for k := 1; k < 8; k++ {
		for i := range 256 {
			p := t[k-1][i]
			t[k][i] = p<<8 ^ t[0][p>>8]
		}
	}
	return t
}()

// CRC16 returns the CRC-16/XMODEM checksum of s.
func CRC16(s string) uint16 {
	t := &crcTables
	var crc uint16
	for len(s) >= 8 {
		crc = t[7][s[0]^byte(crc>>8)] ^ t[6][s[1]^byte(crc)] ^ t[5][s[2]] ^ t[4][s[3]] ^
			t[3][s[4]] ^ t[2][s[5]] ^ t[1][s[6]] ^ t[0][s[7]]
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ t[0][byte(crc>>8)^s[i]]
	}
	return crc
}

// HashTag returns the part of key that Redis Cluster hashes: if key has a
// '{' followed later by a '}' with at least one byte between the first '{'
// and the first '}' after it, the bytes between them; otherwise key.
func HashTag(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] == '{' {
			for j := i + 1; j < len(key); j++ {
				if key[j] == '}' {
					if j == i+1 {
						return key
					}
					return key[i+1 : j]
				}
			}
			return key
		}
	}
	return key
}

// KeySlot returns the Redis Cluster hash slot, in [0, 16384), of key,
// honouring its {hash tag}.
func KeySlot(key string) int {
	return int(CRC16(HashTag(key)) & (SlotCount - 1))
}

// SlotRanges renders ascending slots as Redis prints them, ranges of
// consecutive slots joined by commas: "0-5460,5462".
func SlotRanges(slots []int) string {
	var b []byte
	for i := 0; i < len(slots); {
		j := i
		for j+1 < len(slots) && slots[j+1] == slots[j]+1 {
			j++
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(slots[i]), 10)
		if j > i {
			b = append(b, '-')
			b = strconv.AppendInt(b, int64(slots[j]), 10)
		}
		i = j + 1
	}
	return string(b)
}
