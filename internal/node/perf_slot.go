package node

// keySlot is consistent.KeySlot (CRC16/XMODEM of the key's hash tag, mod
// 16384) computed 8 bytes at a time with slicing tables: the shard of a
// key is computed for every lookup, and the byte-at-a-time loop's chain
// of dependent table loads cost ~3 ns per key byte. perf_slot_test.go
// checks it against consistent.KeySlot.
func keySlot(key string) int { return int(crc16(hashTag(key)) & (numSlots - 1)) }

// crcTables[k][b] is the CRC16/XMODEM register contribution of byte b
// followed by k zero bytes; crcTables[0] is the usual byte table.
var crcTables = func() (t [8][256]uint16) {
	for i := 0; i < 256; i++ {
		crc := uint16(i) << 8
		for j := 0; j < 8; j++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[0][i] = crc
	}
	for k := 1; k < 8; k++ {
		for i := 0; i < 256; i++ {
			p := t[k-1][i]
			t[k][i] = p<<8 ^ t[0][p>>8]
		}
	}
	return t
}()

func crc16(s string) uint16 {
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

// hashTag is the part of key Redis Cluster hashes (consistent.HashTag).
func hashTag(key string) string {
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
