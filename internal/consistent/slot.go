package consistent

// SlotCount is the number of Redis Cluster hash slots.
const SlotCount = 16384

// crc16Table is the CRC-16/XMODEM table (polynomial 0x1021, initial value
// 0, no reflection), the CRC Redis Cluster uses for key slots.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// CRC16 returns the CRC-16/XMODEM checksum of s.
func CRC16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^s[i]]
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
