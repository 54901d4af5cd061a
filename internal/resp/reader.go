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
	// BigArgLen is the length from which a bulk may be read into a
	// buffer of its own (PROTO_MBULK_BIG_ARG): see Reader.
	BigArgLen       = 32 * 1024
	maxMultibulkLen = 1<<31 - 1
	minBufSize      = 16 * 1024
	// bigArgShare: a big bulk gets its own buffer once at least
	// 1/bigArgShare of it has arrived, so memory stays within
	// bigArgShare times the bytes a client sent.
	bigArgShare = 16
	// maxSpare and maxPool bound the buffers a Reader keeps for reuse
	// after a big bulk (the small buffer it left, a buffer given back
	// with Recycle).
	maxSpare = 256 * 1024
	maxPool  = 1024 * 1024
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
	// KeepRaw keeps every request in one buffer, so that LastRaw always
	// returns its bytes (a replica forwarding its master's stream). It
	// turns big-bulk buffers off, as Redis does for its master client.
	KeepRaw bool
}

// Reader parses requests (multibulk and inline) from a stream. It keeps the
// parse state across reads, so a request arriving in many pieces is parsed
// in linear time, and it grows its buffer only as data arrives, so a huge
// declared length costs nothing until the bytes are sent.
//
// The argument slices returned by Next point into the Reader's buffer and
// stay valid until the next call to Fill, except those ArgRetainable
// reports, which stay valid for good; the slice holding them is reused by
// the next call of Next.
//
// Big bulks. As Redis reads a bulk of PROTO_MBULK_BIG_ARG (BigArgLen)
// bytes or more into a buffer holding just that bulk, so the argument
// becomes the value without a copy, a Reader reads such a bulk of an
// authenticated client into a buffer of exactly the bulk and its CRLF,
// with reads sized to the bytes still missing. The rule for memory:
// Redis allocates that buffer as soon as the length is announced (up to
// proto-max-bulk-len); a Reader allocates it once 1/16 of the bulk has
// arrived (until then the buffer grows with the bytes received, as for
// any request, and the bytes received are copied once into the bulk's
// buffer), and only when the bulk fits within the query buffer limit
// (with the request's bytes before it). So a client makes the Reader
// hold at most about 16 times what it sent, and a 50 MB bulk is copied
// about 7 MB in all (the small buffers' growth until the switch, then
// the switch) rather than twice its size. Unauthenticated
// clients cannot send bulks that big (UnauthBulkMax), and KeepRaw turns
// this off. Once a request holding such a bulk has been returned, the
// Reader never writes into that buffer again: the next Fill starts a
// fresh buffer.
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

	// A request one of whose bulks got its own buffer spans buffers:
	// done holds its arguments parsed in buffers the Reader has left
	// (never written again), held counts its bytes there, and big the
	// indexes of its arguments that have a buffer of their own. All three
	// reset when the request is returned.
	done [][]byte
	held int
	big  []int
	// own: buf is a big bulk's buffer, exactly its size; once full it is
	// left for a fresh buffer, never compacted or written over.
	own bool
	// ownBuf is the request's latest big-bulk buffer, lastOwn that of the
	// request last returned (for Recycle); pool is one given back, reused
	// for a later big bulk it can hold; spare is the small buffer left at
	// a big bulk's switch, reused as the fresh buffer once no unreturned
	// request has bytes in it.
	ownBuf, lastOwn, pool, spare []byte

	consumed int64  // bytes of every request returned so far
	last     []byte // raw bytes of the last request returned, nil if it spanned buffers
	lastLen  int    // its length
	lastBig  []int  // big of the last request returned (ArgRetainable)
}

// Consumed returns the number of bytes of all requests returned by Next so
// far (a replica's processed replication offset).
func (r *Reader) Consumed() int64 { return r.consumed }

// LastRaw returns the raw bytes of the request last returned by Next, valid
// until the next Fill (a replica forwards them verbatim to its replicas).
// It is nil for a request read with a big bulk in its own buffer, which
// ReaderOptions.KeepRaw rules out.
func (r *Reader) LastRaw() []byte { return r.last }

// LastLen returns the length of the request last returned by Next.
func (r *Reader) LastLen() int { return r.lastLen }

// ArgRetainable reports whether argument i of the request last returned
// by Next has a buffer of its own (a big bulk, see Reader) that the Reader
// never writes into again, so that a caller may keep it after the request
// (RESTORE keeps a payload's string) instead of copying it. It holds
// until the next call of Next.
func (r *Reader) ArgRetainable(i int) bool {
	for _, j := range r.lastBig {
		if j == i {
			return true
		}
	}
	return false
}

// HasRetainable reports whether ArgRetainable is true for some argument of
// the request last returned by Next.
func (r *Reader) HasRetainable() bool { return len(r.lastBig) > 0 }

// Recycle tells the Reader that the caller keeps none of the arguments of
// the request last returned by Next past the next Fill, as for any
// argument ArgRetainable does not report: the buffer of its (last) big
// bulk may then be reused, by a later Fill, for a later bulk of at least
// half its size, when it is no more than 1 MiB. A caller that keeps an
// argument ArgRetainable reported must not call it. Call it before the
// next Next.
func (r *Reader) Recycle() {
	if r.lastOwn != nil && cap(r.lastOwn) <= maxPool {
		r.pool = r.lastOwn[:cap(r.lastOwn)]
	}
	r.lastOwn = nil
}

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

// Buffered returns the number of unprocessed bytes held (with those of an
// unfinished request in buffers it has left for a fresh one).
func (r *Reader) Buffered() int { return r.held + r.w - r.r }

// BufferCap returns the size of the reader's buffer (for CLIENT LIST qbuf).
func (r *Reader) BufferCap() int { return len(r.buf) }

// Fill reads more data from the underlying reader. It compacts and grows
// the buffer as needed; it invalidates slices returned by Next, except
// those ArgRetainable reports.
func (r *Reader) Fill() error {
	switch {
	case r.own && r.w == len(r.buf):
		// A big bulk's buffer, full: leave it to its argument. The small
		// buffer left at the switch serves again once no unreturned
		// request has bytes in it (held).
		n := max(minBufSize, r.w-r.r-r.pos+4096)
		nb := r.spare
		if r.held > 0 || len(nb) < n {
			nb = make([]byte, n)
		} else {
			r.spare = nil
		}
		r.moveTo(nb)
	case r.own:
		// Still filling the bulk's buffer; r.r is 0.
	case r.r > 0:
		n := copy(r.buf, r.buf[r.r:r.w])
		r.w = n
		r.r = 0
	}
	// missing is how many bytes of a pending big bulk (and its CRLF) have
	// not arrived, 0 if none is pending: reads stop at the bulk's end.
	missing := 0
	if r.bulkLen >= BigArgLen && !r.authLess && !r.opt.KeepRaw {
		total := int(r.bulkLen) + 2
		got := r.w - r.r - r.pos
		if got < total {
			missing = total - got
			if !r.own && got >= total/bigArgShare && r.held+r.pos+total <= r.opt.QueryBufferLimit {
				var nb []byte
				if cap(r.pool) >= total && cap(r.pool)/2 <= total {
					// At most twice the bulk: a kept argument holds it all.
					nb, r.pool = r.pool[:total], nil
				} else {
					nb = make([]byte, total)
				}
				if len(r.buf) <= maxSpare {
					r.spare = r.buf
				}
				r.moveTo(nb)
				r.own, r.ownBuf = true, nb
			}
		}
	}
	if !r.own {
		// A big bulk waiting for its share to arrive grows the buffer only
		// when it is full, by doubling: what it holds until the switch is
		// copied once more.
		need := r.w + 4096
		if r.bulkLen >= 0 && missing == 0 {
			// Make room for the pending bulk, but never more than double
			// what is already held: memory follows the bytes actually
			// received.
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
	}
	if r.held+r.w-r.r > r.opt.QueryBufferLimit {
		return ErrQueryBufferLimit
	}
	room := r.buf[r.w:]
	if missing > 0 && missing < len(room) {
		room = room[:missing]
	}
	n, err := r.rd.Read(room)
	r.w += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// moveTo makes nb the buffer, leaving the current one as it is: the
// arguments of the request in progress parsed so far stay where they are
// (in done), and its unparsed bytes are copied to the start of nb.
func (r *Reader) moveTo(nb []byte) {
	old := r.buf[r.r:r.w]
	for i := 0; i < len(r.argOffs); i += 2 {
		r.done = append(r.done, old[r.argOffs[i]:r.argOffs[i+1]:r.argOffs[i+1]])
	}
	r.argOffs = r.argOffs[:0]
	r.held += r.pos
	r.w = copy(nb, old[r.pos:])
	r.pos = 0
	r.r = 0
	r.buf = nb
	r.own = false
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
	if len(r.lastBig) > 0 {
		// Drop the references to the last request's big buffers, so
		// that they live only as long as what the caller kept of them.
		r.lastBig, r.lastOwn = r.lastBig[:0], nil
		clear(r.args[:cap(r.args)])
	}
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
	r.lastLen = nl + 1
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
			r.lastLen = next
			r.consumed += int64(next)
			r.r += next
			r.reset()
			return nil, nil
		}
		r.argc = int(n)
		r.pos = next
	}
	for len(r.done)+len(r.argOffs)/2 < r.argc {
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
		if r.own {
			// The bulk filled its own buffer (Fill).
			r.big = append(r.big, len(r.done)+len(r.argOffs)/2)
		}
		r.argOffs = append(r.argOffs, r.pos, end)
		r.pos = end + 2
		r.bulkLen = -1
	}
	if cap(r.args) < r.argc {
		r.args = make([][]byte, r.argc)
	}
	args := r.args[:r.argc]
	nd := copy(args, r.done)
	for i := nd; i < len(args); i++ {
		j := 2 * (i - nd)
		args[i] = data[r.argOffs[j]:r.argOffs[j+1]:r.argOffs[j+1]]
	}
	r.last = data[:r.pos]
	if r.held > 0 {
		r.last = nil
		clear(r.done)
		r.done = r.done[:0]
	}
	r.lastLen = r.held + r.pos
	r.consumed += int64(r.lastLen)
	r.held = 0
	r.lastBig, r.big = r.big, r.lastBig[:0]
	r.lastOwn, r.ownBuf = r.ownBuf, nil
	r.r += r.pos
	r.reset()
	if r.own && r.r == r.w {
		// The big bulk's buffer is all returned: forget it now rather
		// than at the next Fill, so that it lives only as long as what
		// the caller keeps of it (Fill starts a fresh buffer).
		r.buf, r.r, r.w = nil, 0, 0
	}
	if cap(r.argOffs) > 4096 {
		r.argOffs = nil
	}
	if cap(r.args) > 1024 {
		r.args = nil
	}
	if cap(r.done) > 1024 {
		r.done = nil
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
