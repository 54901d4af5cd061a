package hll

import (
	"errors"
	"strings"
)

// The command-level steps of PFADD and PFDEBUG (Redis's pfaddCommand and
// pfdebugCommand), as pure functions on the value's bytes.

// AddAll adds elements to the HyperLogLog b (nil: a new one, which
// counts as an update). It returns the new value and how many
// registers changed. On a corrupt value the edits made before the
// corrupt part are kept in the returned bytes, as in Redis, and err is
// ErrCorrupt.
func AddAll(b []byte, elements [][]byte, maxBytes int) (out []byte, updated int, err error) {
	if b == nil {
		b = New()
		updated++
	}
	for _, ele := range elements {
		next, changed, err := Add(b, ele, maxBytes)
		if err != nil {
			return b, updated, ErrCorrupt
		}
		b = next
		if changed {
			updated++
		}
	}
	return b, updated, nil
}

// Status is a simple-string reply of PFDEBUG.
type Status string

// Debug runs PFDEBUG sub on the valid HyperLogLog b. reply is []uint8
// (GETREG: the registers), string (DECODE: a bulk string), Status
// (ENCODING) or int64 (TODENSE); when the subcommand converted the value
// to dense, out holds the new bytes (changed true: counted and
// propagated).
func Debug(sub string, b []byte) (reply any, out []byte, changed bool, err error) {
	out = b
	switch strings.ToLower(sub) {
	case "getreg":
		if IsSparse(b) {
			if out, err = ToDense(b); err != nil {
				return nil, b, false, ErrCorrupt
			}
			changed = true
		}
		regs, _ := RegisterValues(out)
		return regs, out, changed, nil
	case "decode":
		s, err := Decode(b)
		return s, b, false, err
	case "encoding":
		if IsSparse(b) {
			return Status("sparse"), b, false, nil
		}
		return Status("dense"), b, false, nil
	case "todense":
		if !IsSparse(b) {
			return int64(0), b, false, nil
		}
		if out, err = ToDense(b); err != nil {
			return nil, b, false, ErrCorrupt
		}
		return int64(1), out, true, nil
	}
	return nil, b, false, errors.New("ERR Unknown PFDEBUG subcommand '" + sub + "'")
}
