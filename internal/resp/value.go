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

// ReadValue reads one reply from br.
func ReadValue(br *bufio.Reader) (Value, error) {
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
		if err != nil || n < -1 || n > MaxReplyBulkLen {
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
		if err != nil || n < -1 || n > 1<<24 {
			return Value{}, fmt.Errorf("resp: bad aggregate length %q", rest)
		}
		if n == -1 {
			return Value{Type: t, Null: true}, nil
		}
		if t == '%' || t == '|' {
			n *= 2
		}
		v := Value{Type: t, Elems: make([]Value, 0, n)}
		for i := int64(0); i < n; i++ {
			e, err := ReadValue(br)
			if err != nil {
				return Value{}, err
			}
			v.Elems = append(v.Elems, e)
		}
		if t == '|' { // attribute: skip it, return the value that follows
			return ReadValue(br)
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
