package rdb

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// Function writes a FUNCTION2 record: a function library's code, as Redis
// 7.0 saves each library before the databases.
func (e *Encoder) Function(code []byte) {
	e.buf = AppendFunction(e.buf, code)
	e.maybeFlush()
}

// AppendFunction appends a FUNCTION2 record (the opcode, then the code as
// a string object) to b: the body of FUNCTION DUMP's payload.
func AppendFunction(b, code []byte) []byte {
	b = append(b, OpFunction2)
	return appendString(b, code, false)
}

// FunctionsPayload is FUNCTION DUMP's payload for the given library codes:
// their FUNCTION2 records, then the RDB version and the CRC64 of what
// precedes it, both little-endian.
func FunctionsPayload(codes [][]byte) []byte {
	var p []byte
	for _, c := range codes {
		p = AppendFunction(p, c)
	}
	p = binary.LittleEndian.AppendUint16(p, Version)
	return binary.LittleEndian.AppendUint64(p, Checksum(p))
}

// ErrFunctionsPayload is a FUNCTION RESTORE payload with a bad version or
// checksum.
var ErrFunctionsPayload = errors.New("rdb: bad functions payload version or checksum")

// ParseFunctionsPayload checks a FUNCTION DUMP payload's trailer and
// returns the library codes it holds. badType reports a record that is
// not a FUNCTION2 record.
func ParseFunctionsPayload(p []byte) (codes [][]byte, badType bool, err error) {
	if len(p) < 10 || binary.LittleEndian.Uint16(p[len(p)-10:]) > Version ||
		Checksum(p[:len(p)-8]) != binary.LittleEndian.Uint64(p[len(p)-8:]) {
		return nil, false, ErrFunctionsPayload
	}
	d := NewDecoder(bytes.NewReader(p[:len(p)-10]))
	for {
		t, err := d.readByte()
		if err != nil {
			return codes, false, nil
		}
		if t != OpFunction2 {
			return nil, true, nil
		}
		code, err := d.ReadString()
		if err != nil {
			return nil, false, err
		}
		codes = append(codes, code)
	}
}
