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

// Union merges HyperLogLogs register by register (PFCOUNT of several
// keys, PFMERGE). The zero value is empty.
type Union struct {
	// Regs are the merged registers.
	Regs [Registers]uint8
	// Dense reports that a dense value was merged (PFMERGE's result is
	// then dense too, as Redis's).
	Dense bool
}

// Add merges the valid HyperLogLog b.
func (u *Union) Add(b []byte) error {
	if !IsSparse(b) {
		u.Dense = true
	}
	return MergeInto(&u.Regs, b)
}

// CountCached is PFCOUNT of one valid HyperLogLog b: the cached
// cardinality when it is valid, else the computed one and a copy of b
// holding it in its cache (updated non-nil: the new value, counted and
// propagated as Redis's cache update; a copy, so that a snapshot in
// progress keeps the old bytes).
func CountCached(b []byte) (card uint64, updated []byte, err error) {
	if card, valid := Cached(b); valid {
		return card, nil, nil
	}
	if card, err = Count(b); err != nil {
		return 0, nil, err
	}
	updated = append([]byte(nil), b...)
	SetCached(updated, card)
	return card, updated, nil
}
