package rdb

// CRC64 as Redis computes it (crc64.c): the Jones polynomial
// 0xad93d23594c935a9, reflected input and output, initial value 0 and no
// final xor. Check value: Checksum([]byte("123456789")) == 0xe9c6d914c4b8d9ca.
//
// The table is built for the reflected form and applied eight bytes at a
// time (slicing-by-8).

// jonesReflected is the Jones polynomial with its bits reversed.
const jonesReflected = 0x95ac9329ac4bc9b5

var crcTable [8][256]uint64

func init() {
	for i := 0; i < 256; i++ {
		c := uint64(i)
		for j := 0; j < 8; j++ {
			if c&1 == 1 {
				c = (c >> 1) ^ jonesReflected
			} else {
				c >>= 1
			}
		}
		crcTable[0][i] = c
	}
	for i := 0; i < 256; i++ {
		c := crcTable[0][i]
		for k := 1; k < 8; k++ {
			c = crcTable[0][c&0xff] ^ (c >> 8)
			crcTable[k][i] = c
		}
	}
}

// UpdateCRC returns crc extended with p.
func UpdateCRC(crc uint64, p []byte) uint64 {
	for len(p) >= 8 {
		crc ^= uint64(p[0]) | uint64(p[1])<<8 | uint64(p[2])<<16 | uint64(p[3])<<24 |
			uint64(p[4])<<32 | uint64(p[5])<<40 | uint64(p[6])<<48 | uint64(p[7])<<56
		crc = crcTable[7][crc&0xff] ^ crcTable[6][(crc>>8)&0xff] ^
			crcTable[5][(crc>>16)&0xff] ^ crcTable[4][(crc>>24)&0xff] ^
			crcTable[3][(crc>>32)&0xff] ^ crcTable[2][(crc>>40)&0xff] ^
			crcTable[1][(crc>>48)&0xff] ^ crcTable[0][crc>>56]
		p = p[8:]
	}
	for _, b := range p {
		crc = crcTable[0][byte(crc)^b] ^ (crc >> 8)
	}
	return crc
}

// Checksum returns the CRC64 of p.
func Checksum(p []byte) uint64 { return UpdateCRC(0, p) }
