package grammar

import "strconv"

// Scan is the "cursor [MATCH pattern] [COUNT count]" of HSCAN, SSCAN and
// ZSCAN.
type Scan struct {
	Cursor  uint64 // where to resume
	Count   int    // COUNT, 10 by default, at most 2^30
	Pattern string // MATCH's pattern
	Match   bool   // a pattern other than "*" was given
}

// ParseScan parses a collection SCAN's arguments from the cursor on, as
// Redis's parseScanCursorOrReply and scanGenericCommand do.
func ParseScan(args [][]byte) (Scan, error) {
	cur, ok := Cursor(args[0])
	if !ok {
		return Scan{}, ErrInvalidCursor
	}
	o, err := ScanOptions(args[1:])
	o.Cursor = cur
	return o, err
}

// ScanOptions parses "[MATCH pattern] [COUNT count]", in pairs: a COUNT
// that is not an integer fails with ErrNotInt, one below 1 with
// ErrSyntax.
func ScanOptions(args [][]byte) (Scan, error) {
	o := Scan{Count: 10}
	for i := 0; i < len(args); i += 2 {
		if len(args)-i < 2 {
			return o, ErrSyntax
		}
		switch {
		case eq(args[i], "count"):
			n, err := Int(args[i+1])
			if err != nil {
				return o, err
			}
			if n < 1 {
				return o, ErrSyntax
			}
			o.Count = int(min(n, 1<<30))
		case eq(args[i], "match"):
			o.Pattern = string(args[i+1])
			o.Match = o.Pattern != "*"
		default:
			return o, ErrSyntax
		}
	}
	return o, nil
}

// Cursor parses a SCAN cursor as strtoul does (optional sign, a negative
// value wraps modulo 2^64, the empty string is 0), refusing leading
// spaces, trailing garbage and overflow.
func Cursor(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, true
	}
	if b[0] == ' ' || (b[0] >= '\t' && b[0] <= '\r') {
		return 0, false
	}
	neg := false
	s := b
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		s = s[1:]
	}
	if len(s) == 0 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(s), 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}
