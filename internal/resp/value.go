package resp

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
)

// Value is a parsed RESP2/RESP3 reply, as a client reads it.
type Value struct {
	Type  byte    // the type byte: '+', '-', ':', '$', '*', '%', '~', '>', '_', '#', ',', '(', '='
	Str   string  // simple string, error text (without '-'), bulk or verbatim payload, number text
	Int   int64   // integer replies
	Elems []Value // arrays, sets, pushes; maps as key, value, key, value...
	Null  bool    // null bulk, null array or RESP3 null
}

// IsError reports whether v is an error reply.
func (v Value) IsError() bool { return v.Type == '-' || v.Type == '!' }

// MaxReplyBulkLen bounds bulk strings ReadValue accepts (512mb).
const MaxReplyBulkLen = 512 * 1024 * 1024

// Defaults of ValueLimits.
const (
	// DefaultMaxElems bounds the elements of one aggregate reply.
	DefaultMaxElems = 1 << 24
	// DefaultMaxDepth bounds how deeply aggregates may nest.
	DefaultMaxDepth = 128
	// maxPrealloc caps the elements allocated before they arrive, so a
	// short reply declaring a huge aggregate costs nothing until its
	// elements are read.
	maxPrealloc = 1024
)

// ValueLimits bounds what ReadValueLimited accepts, for a client reading
// replies from a peer it does not trust to be small. Zero fields mean the
// defaults: MaxReplyBulkLen, DefaultMaxElems, DefaultMaxDepth.
type ValueLimits struct {
	// MaxBulkLen is the longest bulk string, verbatim string or bulk error.
	MaxBulkLen int64
	// MaxElems is the largest element count of one array, set, push or
	// map (a map counts its entries, not its keys and values).
	MaxElems int64
	// MaxDepth is how deeply aggregates may nest (1: no nesting).
	MaxDepth int
}

func (l ValueLimits) withDefaults() ValueLimits {
	if l.MaxBulkLen <= 0 {
		l.MaxBulkLen = MaxReplyBulkLen
	}
	if l.MaxElems <= 0 {
		l.MaxElems = DefaultMaxElems
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	return l
}

// ReadValue reads one reply from br with the default limits.
func ReadValue(br *bufio.Reader) (Value, error) {
	return readValue(br, ValueLimits{}.withDefaults(), 0)
}

// ReadValueLimited reads one reply from br, refusing (with an error, and
// before allocating for it) a bulk or aggregate longer than lim allows.
func ReadValueLimited(br *bufio.Reader, lim ValueLimits) (Value, error) {
	return readValue(br, lim.withDefaults(), 0)
}

func readValue(br *bufio.Reader, lim ValueLimits, depth int) (Value, error) {
	line, err := readReplyLine(br)
	if err != nil {
		return Value{}, err
	}
	if len(line) == 0 {
		return Value{}, fmt.Errorf("resp: empty reply line")
	}
	t, rest := line[0], string(line[1:])
	switch t {
	case '+', '-', ',', '(', '#':
		return Value{Type: t, Str: rest}, nil
	case '_':
		return Value{Type: t, Null: true}, nil
	case ':':
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			return Value{}, fmt.Errorf("resp: bad integer %q", rest)
		}
		return Value{Type: t, Int: n}, nil
	case '$', '=', '!':
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil || n < -1 || n > lim.MaxBulkLen {
			return Value{}, fmt.Errorf("resp: bad bulk length %q", rest)
		}
		if n == -1 {
			return Value{Type: t, Null: true}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return Value{}, err
		}
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return Value{}, fmt.Errorf("resp: bulk not terminated by CRLF")
		}
		if t == '!' {
			t = '-'
		}
		return Value{Type: t, Str: string(buf[:n])}, nil
	case '*', '%', '~', '>', '|':
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil || n < -1 || n > lim.MaxElems {
			return Value{}, fmt.Errorf("resp: bad aggregate length %q", rest)
		}
		if n == -1 {
			return Value{Type: t, Null: true}, nil
		}
		if depth+1 > lim.MaxDepth {
			return Value{}, fmt.Errorf("resp: aggregates nested deeper than %d", lim.MaxDepth)
		}
		if t == '%' || t == '|' {
			n *= 2
		}
		v := Value{Type: t, Elems: make([]Value, 0, min(n, maxPrealloc))}
		for i := int64(0); i < n; i++ {
			e, err := readValue(br, lim, depth+1)
			if err != nil {
				return Value{}, err
			}
			v.Elems = append(v.Elems, e)
		}
		if t == '|' { // attribute: skip it, return the value that follows
			return readValue(br, lim, depth)
		}
		return v, nil
	}
	return Value{}, fmt.Errorf("resp: unknown reply type %q", t)
}

func readReplyLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, fmt.Errorf("resp: reply line too long")
	}
	if err != nil {
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("resp: reply line not terminated by CRLF")
	}
	return line[:len(line)-2], nil
}
