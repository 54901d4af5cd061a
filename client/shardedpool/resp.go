package shardedpool

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// The Sentinel subscription speaks RESP2 over a raw connection so that the
// pool sees every disconnect and reconnect (go-redis's PubSub hides them).
// Only the small part of RESP a Sentinel sends is read, with strict limits.

const (
	maxBulk  = 64 << 10
	maxArray = 64
)

// respError is an error reply.
type respError string

func (e respError) Error() string { return string(e) }

// readRESP reads one RESP2 value: string (simple or bulk), respError,
// int64, nil, or []interface{}. Push frames ('>') are read as arrays.
func readRESP(r *bufio.Reader) (interface{}, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, errors.New("shardedpool: malformed RESP line")
	}
	body := string(line[1 : len(line)-2])
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return respError(body), nil
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '_':
		return nil, nil
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n > maxBulk {
			return nil, fmt.Errorf("shardedpool: bad bulk length %q", body)
		}
		if n < 0 {
			return nil, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		if b[n] != '\r' || b[n+1] != '\n' {
			return nil, errors.New("shardedpool: bulk string not terminated")
		}
		return string(b[:n]), nil
	case '*', '>':
		n, err := strconv.Atoi(body)
		if err != nil || n > maxArray {
			return nil, fmt.Errorf("shardedpool: bad array length %q", body)
		}
		if n < 0 {
			return nil, nil
		}
		a := make([]interface{}, n)
		for i := range a {
			if a[i], err = readRESP(r); err != nil {
				return nil, err
			}
		}
		return a, nil
	}
	return nil, fmt.Errorf("shardedpool: unexpected RESP type %q", line[0])
}

// appendCommand appends a RESP2 command array.
func appendCommand(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}
