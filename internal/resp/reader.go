package resp

import (
	"bytes"
	"errors"
	"io"
)

// Limits Redis applies to requests (src/server.h).
const (
	// InlineMaxSize is the longest inline request or multibulk/bulk header
	// line accepted (PROTO_INLINE_MAX_SIZE).
	InlineMaxSize = 64 * 1024
	// DefaultMaxBulkLen is proto-max-bulk-len's default (512mb).
	DefaultMaxBulkLen = 512 * 1024 * 1024
	// DefaultQueryBufferLimit is client-query-buffer-limit's default (1gb).
	DefaultQueryBufferLimit = 1024 * 1024 * 1024
	// UnauthMultibulkMax and UnauthBulkMax bound requests of clients that
	// have not authenticated yet when a password is required.
	UnauthMultibulkMax = 10
	UnauthBulkMax      = 16384
	maxMultibulkLen    = 1<<31 - 1
	minBufSize         = 16 * 1024
)

// ErrIncomplete is returned by Next when the buffer holds no complete
// request; call Fill and try again.
var ErrIncomplete = errors.New("resp: incomplete request")

// ProtocolError is a malformed request. Its text is Redis's exact message;
// the connection must be closed after replying with it.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "ERR Protocol error: " + e.Msg }

// ErrQueryBufferLimit is returned when a client's unprocessed input exceeds
// the query buffer limit; Redis closes such a client without a reply.
var ErrQueryBufferLimit = errors.New("resp: client query buffer limit reached")

// ReaderOptions bounds what a Reader accepts. Zero values mean Redis's
// defaults.
type ReaderOptions struct {
	// MaxBulkLen is proto-max-bulk-len (default 512mb).
	MaxBulkLen int64
	// QueryBufferLimit is client-query-buffer-limit (default 1gb).
	QueryBufferLimit int
}

// Reader parses requests (multibulk and inline) from a stream. It keeps the
// parse state across reads, so a request arriving in many pieces is parsed
// in linear time, and it grows its buffer only as data arrives, so a huge
// declared length costs nothing until the bytes are sent.
//
// The argument slices returned by Next point into the Reader's buffer and
// stay valid until the next call to Fill.
type Reader struct {
	rd   io.Reader
	opt  ReaderOptions
	buf  []byte
	r, w int // unread data is buf[r:w]

	// Parse state of the request being read, as offsets from r.
	pos      int   // next unparsed byte, relative to r
	argc     int   // declared argument count, -1 when no header parsed yet
	bulkLen  int64 // declared length of the bulk being read, -1 if none
	argOffs  []int // start,end pairs relative to r
	args     [][]byte
	inline   bool
	authLess bool // apply the unauthenticated limits

	consumed int64  // bytes of every request returned so far
	last     []byte // raw bytes of the last request returned
}

// Consumed returns the number of bytes of all requests returned by Next so
// far (a replica's processed replication offset).
func (r *Reader) Consumed() int64 { return r.consumed }

// LastRaw returns the raw bytes of the request last returned by Next, valid
// until the next Fill (a replica forwards them verbatim to its replicas).
func (r *Reader) LastRaw() []byte { return r.last }

// NewReader returns a Reader over rd.
func NewReader(rd io.Reader, opt ReaderOptions) *Reader {
	if opt.MaxBulkLen <= 0 {
		opt.MaxBulkLen = DefaultMaxBulkLen
	}
	if opt.QueryBufferLimit <= 0 {
		opt.QueryBufferLimit = DefaultQueryBufferLimit
	}
	return &Reader{rd: rd, opt: opt, buf: make([]byte, minBufSize), argc: -1, bulkLen: -1}
}

// SetMaxBulkLen changes proto-max-bulk-len for subsequent requests.
func (r *Reader) SetMaxBulkLen(n int64) { r.opt.MaxBulkLen = n }

// SetQueryBufferLimit changes client-query-buffer-limit.
func (r *Reader) SetQueryBufferLimit(n int) { r.opt.QueryBufferLimit = n }

// SetUnauthenticated turns the stricter limits for clients that still have
// to authenticate on or off.
func (r *Reader) SetUnauthenticated(v bool) { r.authLess = v }

// Buffered returns the number of unprocessed bytes held.
func (r *Reader) Buffered() int { return r.w - r.r }

// BufferCap returns the size of the reader's buffer (for CLIENT LIST qbuf).
func (r *Reader) BufferCap() int { return len(r.buf) }

// Fill reads more data from the underlying reader. It compacts and grows
// the buffer as needed; it invalidates slices returned by Next.
func (r *Reader) Fill() error {
	if r.r > 0 {
		n := copy(r.buf, r.buf[r.r:r.w])
		r.w = n
		r.r = 0
	}
	need := r.w + 4096
	if r.bulkLen >= 0 {
		// Make room for the pending bulk, but never more than double what
		// is already held: memory follows the bytes actually received.
		want := r.pos + int(r.bulkLen) + 2
		if want > need {
			need = want
		}
		if limit := 2*len(r.buf) + minBufSize; need > limit {
			need = limit
		}
	}
	if need > len(r.buf) {
		n := 2 * len(r.buf)
		if n < need {
			n = need
		}
		nb := make([]byte, n)
		copy(nb, r.buf[:r.w])
		r.buf = nb
	}
	if r.w-r.r > r.opt.QueryBufferLimit {
		return ErrQueryBufferLimit
	}
	n, err := r.rd.Read(r.buf[r.w:])
	r.w += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// ReadCommand returns the next request, reading from the stream as needed.
func (r *Reader) ReadCommand() ([][]byte, error) {
	for {
		args, err := r.Next()
		if err != ErrIncomplete {
			return args, err
		}
		if err := r.Fill(); err != nil {
			return nil, err
		}
	}
}

func (r *Reader) reset() {
	r.pos = 0
	r.argc = -1
	r.bulkLen = -1
	r.argOffs = r.argOffs[:0]
	r.inline = false
}

// Next parses the next request from buffered data. It returns ErrIncomplete
// when more data is needed, a *ProtocolError for malformed input, and a
// zero-length slice never (empty requests are skipped).
func (r *Reader) Next() ([][]byte, error) {
	for {
		data := r.buf[r.r:r.w]
		if len(data) == 0 {
			return nil, ErrIncomplete
		}
		if r.argc < 0 && !r.inline {
			if data[0] != '*' {
				r.inline = true
			}
		}
		if r.inline {
			args, err := r.nextInline(data)
			if err != nil || args != nil {
				return args, err
			}
			continue // empty line skipped
		}
		args, err := r.nextMultibulk(data)
		if err != nil || args != nil {
			return args, err
		}
	}
}

func (r *Reader) nextInline(data []byte) ([][]byte, error) {
	nl := bytes.IndexByte(data, '\n')
	if nl > 0 && bytes.IndexByte(data[:nl], 0) >= 0 {
		// Redis finds the end of an inline request with strchr, which
		// stops at a NUL byte: a request with a NUL before its newline
		// never ends, and is refused once it grows past InlineMaxSize.
		nl = -1
	}
	if nl < 0 {
		if len(data) > InlineMaxSize {
			return nil, &ProtocolError{"too big inline request"}
		}
		return nil, ErrIncomplete
	}
	line := data[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args, ok := SplitArgs(line)
	r.last = data[:nl+1]
	r.consumed += int64(nl + 1)
	r.r += nl + 1
	r.reset()
	if !ok {
		return nil, &ProtocolError{"unbalanced quotes in request"}
	}
	if len(args) == 0 {
		return nil, nil
	}
	return args, nil
}

// readLine returns the header line starting at data[pos] (without CRLF) and
// the offset after it.
func readLine(data []byte, pos int) ([]byte, int, bool) {
	i := bytes.IndexByte(data[pos:], '\r')
	if i < 0 || pos+i+1 >= len(data) {
		return nil, 0, false
	}
	return data[pos : pos+i], pos + i + 2, true
}

func (r *Reader) nextMultibulk(data []byte) ([][]byte, error) {
	if r.argc < 0 {
		line, next, ok := readLine(data, 0)
		if !ok {
			if len(data) > InlineMaxSize {
				return nil, &ProtocolError{"too big mbulk count string"}
			}
			return nil, ErrIncomplete
		}
		n, ok := parseLen(line[1:])
		if !ok || n > maxMultibulkLen {
			return nil, &ProtocolError{"invalid multibulk length"}
		}
		if r.authLess && n > UnauthMultibulkMax {
			return nil, &ProtocolError{"unauthenticated multibulk length"}
		}
		if n <= 0 {
			r.last = data[:next]
			r.consumed += int64(next)
			r.r += next
			r.reset()
			return nil, nil
		}
		r.argc = int(n)
		r.pos = next
	}
	for len(r.argOffs)/2 < r.argc {
		if r.bulkLen < 0 {
			if r.pos >= len(data) {
				return nil, ErrIncomplete
			}
			line, next, ok := readLine(data, r.pos)
			if !ok {
				if len(data)-r.pos > InlineMaxSize {
					return nil, &ProtocolError{"too big bulk count string"}
				}
				return nil, ErrIncomplete
			}
			if len(line) == 0 || line[0] != '$' {
				got := byte('\r')
				if len(line) > 0 {
					got = line[0]
				}
				return nil, &ProtocolError{"expected '$', got '" + string(got) + "'"}
			}
			n, ok := parseLen(line[1:])
			if !ok || n < 0 || n > r.opt.MaxBulkLen {
				return nil, &ProtocolError{"invalid bulk length"}
			}
			if r.authLess && n > UnauthBulkMax {
				return nil, &ProtocolError{"unauthenticated bulk length"}
			}
			r.bulkLen = n
			r.pos = next
		}
		end := r.pos + int(r.bulkLen)
		if end+2 > len(data) {
			return nil, ErrIncomplete
		}
		r.argOffs = append(r.argOffs, r.pos, end)
		r.pos = end + 2
		r.bulkLen = -1
	}
	if cap(r.args) < r.argc {
		r.args = make([][]byte, r.argc)
	}
	args := r.args[:r.argc]
	for i := range args {
		args[i] = data[r.argOffs[2*i]:r.argOffs[2*i+1]:r.argOffs[2*i+1]]
	}
	r.last = data[:r.pos]
	r.consumed += int64(r.pos)
	r.r += r.pos
	r.reset()
	if cap(r.argOffs) > 4096 {
		r.argOffs = nil
	}
	if cap(r.args) > 1024 {
		r.args = nil
	}
	return args, nil
}

// parseLen parses a length as Redis's string2ll: optional '-', digits,
// no leading zeros, no '+', no spaces, within int64.
func parseLen(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var n uint64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		if n > (1<<63)/10 {
			return 0, false
		}
		n = n*10 + uint64(ch-'0')
	}
	if neg {
		if n > 1<<63 {
			return 0, false
		}
		return -int64(n), true
	}
	if n > 1<<63-1 {
		return 0, false
	}
	return int64(n), true
}

// SplitArgs splits an inline request into arguments the way Redis's
// sdssplitargs does: spaces separate arguments, "double quotes" support
// \n \r \t \b \a \\ \" and \xHH escapes, 'single quotes' support \'. It
// reports false for unbalanced quotes or a closing quote not followed by a
// space.
func SplitArgs(line []byte) ([][]byte, bool) {
	var args [][]byte
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i >= len(line) {
			return args, true
		}
		var cur []byte
		inDQ, inSQ := false, false
		done := false
		for !done {
			if inDQ {
				if i >= len(line) {
					return nil, false
				}
				c := line[i]
				if c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]) {
					cur = append(cur, hexVal(line[i+2])<<4|hexVal(line[i+3]))
					i += 3
				} else if c == '\\' && i+1 < len(line) {
					i++
					switch line[i] {
					case 'n':
						cur = append(cur, '\n')
					case 'r':
						cur = append(cur, '\r')
					case 't':
						cur = append(cur, '\t')
					case 'b':
						cur = append(cur, '\b')
					case 'a':
						cur = append(cur, '\a')
					default:
						cur = append(cur, line[i])
					}
				} else if c == '"' {
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
				} else {
					cur = append(cur, c)
				}
			} else if inSQ {
				if i >= len(line) {
					return nil, false
				}
				c := line[i]
				if c == '\\' && i+1 < len(line) && line[i+1] == '\'' {
					i++
					cur = append(cur, '\'')
				} else if c == '\'' {
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
				} else {
					cur = append(cur, c)
				}
			} else {
				if i >= len(line) {
					done = true
					break
				}
				switch c := line[i]; c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"':
					inDQ = true
				case '\'':
					inSQ = true
				default:
					cur = append(cur, c)
				}
			}
			if i < len(line) {
				i++
			}
		}
		if cur == nil {
			cur = []byte{}
		}
		args = append(args, cur)
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
