package strops

import (
	"errors"

	"github.com/shardis/shardis/internal/resp"
)

// Errors of LCS, in Redis's words.
var (
	// ErrLCSLenAndIdx refuses LEN together with IDX.
	ErrLCSLenAndIdx = errors.New("ERR If you want both the length and indexes, please just use IDX.")
	// ErrLCSMemory refuses a table larger than proto-max-bulk-len.
	ErrLCSMemory = errors.New("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
)

// LCSOptions are LCS's parsed options.
type LCSOptions struct {
	// Len asks for the length only, Idx for the matches.
	Len, Idx bool
	// WithMatchLen adds each match's length to IDX's reply.
	WithMatchLen bool
	// MinMatchLen drops IDX matches shorter than it (0: keep all).
	MinMatchLen int64
}

// ParseLCSOptions parses LCS's options (after the two keys).
func ParseLCSOptions(opts [][]byte) (LCSOptions, error) {
	var o LCSOptions
	for j := 0; j < len(opts); j++ {
		switch opt := opts[j]; {
		case eqFold(opt, "IDX"):
			o.Idx = true
		case eqFold(opt, "LEN"):
			o.Len = true
		case eqFold(opt, "WITHMATCHLEN"):
			o.WithMatchLen = true
		case eqFold(opt, "MINMATCHLEN") && j+1 < len(opts):
			n, ok := parseInt(opts[j+1])
			if !ok {
				return o, ErrNotInt
			}
			o.MinMatchLen = max(n, 0)
			j++
		default:
			return o, ErrSyntax
		}
	}
	if o.Len && o.Idx {
		return o, ErrLCSLenAndIdx
	}
	return o, nil
}

// LCSMatch is one match of LCS IDX: a[AStart..AEnd] = b[BStart..BEnd].
type LCSMatch struct{ AStart, AEnd, BStart, BEnd int }

// LCSResult is what LCS computed.
type LCSResult struct {
	// Len is the length of the longest common subsequence.
	Len int
	// Seq is the subsequence itself (unless only the length was asked).
	Seq []byte
	// Matches are the matching ranges, last first, as Redis lists them
	// (only with IDX).
	Matches []LCSMatch
}

// LCS computes the longest common subsequence of a and b with Redis's
// dynamic programming table, refusing a table of more than limit bytes
// (proto-max-bulk-len).
func LCS(a, b []byte, o LCSOptions, limit int64) (LCSResult, error) {
	alen, blen := len(a), len(b)
	cells := uint64(alen+1) * uint64(blen+1)
	if cells*4 > uint64(limit) {
		return LCSResult{}, ErrLCSMemory
	}
	lcs := make([]uint32, cells)
	at := func(i, j int) *uint32 { return &lcs[j+i*(blen+1)] }
	for i := 1; i <= alen; i++ {
		for j := 1; j <= blen; j++ {
			if a[i-1] == b[j-1] {
				*at(i, j) = *at(i-1, j-1) + 1
			} else {
				*at(i, j) = max(*at(i-1, j), *at(i, j-1))
			}
		}
	}
	res := LCSResult{Len: int(*at(alen, blen))}
	if o.Len {
		return res, nil
	}
	res.Seq = make([]byte, res.Len)
	idx := res.Len
	cur := LCSMatch{AStart: -1}
	i, j := alen, blen
	for i > 0 && j > 0 {
		emit := false
		if a[i-1] == b[j-1] {
			res.Seq[idx-1] = a[i-1]
			if cur.AStart == -1 {
				cur = LCSMatch{i - 1, i - 1, j - 1, j - 1}
			} else if cur.AStart == i && cur.BStart == j {
				cur.AStart--
				cur.BStart--
			} else {
				emit = true
			}
			if cur.AStart == 0 || cur.BStart == 0 {
				emit = true
			}
			idx--
			i--
			j--
		} else {
			if *at(i-1, j) > *at(i, j-1) {
				i--
			} else {
				j--
			}
			if cur.AStart != -1 {
				emit = true
			}
		}
		if emit {
			if o.Idx && (o.MinMatchLen == 0 || int64(cur.AEnd-cur.AStart+1) >= o.MinMatchLen) {
				res.Matches = append(res.Matches, cur)
			}
			cur.AStart = -1
		}
	}
	return res, nil
}

// AppendIdx appends LCS IDX's reply in protocol proto: a map of the
// matches (each [a range, b range] and, withLen, its length) and the
// length.
func (r *LCSResult) AppendIdx(b []byte, proto int, withLen bool) []byte {
	b = resp.AppendMapLen(b, proto, 2)
	b = resp.AppendBulkString(b, "matches")
	b = resp.AppendArrayLen(b, len(r.Matches))
	for _, m := range r.Matches {
		if withLen {
			b = resp.AppendArrayLen(b, 3)
		} else {
			b = resp.AppendArrayLen(b, 2)
		}
		b = appendPair(b, m.AStart, m.AEnd)
		b = appendPair(b, m.BStart, m.BEnd)
		if withLen {
			b = resp.AppendInt(b, int64(m.AEnd-m.AStart+1))
		}
	}
	b = resp.AppendBulkString(b, "len")
	return resp.AppendInt(b, int64(r.Len))
}

func appendPair(b []byte, x, y int) []byte {
	b = resp.AppendArrayLen(b, 2)
	b = resp.AppendInt(b, int64(x))
	return resp.AppendInt(b, int64(y))
}
