package repl

// Backlog is the master's replication backlog: a ring holding the last
// Size() bytes of the replication stream, from which a replica that lost
// its link continues partially (PSYNC). The caller keeps the replication
// offset and serialises access; a nil *Backlog is no backlog.
type Backlog struct {
	buf     []byte
	histlen int // valid bytes
	idx     int // next write position in the ring
}

// NewBacklog returns an empty backlog of size bytes.
func NewBacklog(size int) *Backlog { return &Backlog{buf: make([]byte, size)} }

// Size is the ring's capacity.
func (b *Backlog) Size() int { return len(b.buf) }

// Histlen is how many bytes of history the backlog holds (0 for none).
func (b *Backlog) Histlen() int {
	if b == nil {
		return 0
	}
	return b.histlen
}

// Write appends stream bytes, dropping the oldest once the ring is full.
func (b *Backlog) Write(p []byte) {
	if len(p) > len(b.buf) {
		p = p[len(p)-len(b.buf):]
	}
	for len(p) > 0 {
		n := copy(b.buf[b.idx:], p)
		b.idx = (b.idx + n) % len(b.buf)
		p = p[n:]
		b.histlen += n
	}
	if b.histlen > len(b.buf) {
		b.histlen = len(b.buf)
	}
}

// Resize changes the capacity, keeping as much of the history as the new
// size holds (Redis's resizeReplicationBacklog): a replica cut after the
// change can still continue from an offset the old backlog held.
func (b *Backlog) Resize(size int) {
	if size == len(b.buf) {
		return
	}
	keep := min(b.histlen, size)
	nb := make([]byte, size)
	start := (b.idx - keep + len(b.buf)) % len(b.buf)
	k := copy(nb[:keep], b.buf[start:])
	copy(nb[k:keep], b.buf[:keep-k])
	b.buf, b.histlen, b.idx = nb, keep, keep%size
}

// From returns a copy of the stream from offset psyncOffset on, the
// stream being at offset (the last byte written); ok is false when those
// bytes are no longer (or not yet) held.
func (b *Backlog) From(psyncOffset, offset int64) ([]byte, bool) {
	if b == nil {
		return nil, false
	}
	first := offset - int64(b.histlen) + 1
	if psyncOffset < first || psyncOffset > offset+1 {
		return nil, false
	}
	n := int(offset + 1 - psyncOffset)
	out := make([]byte, n)
	start := (b.idx - n + len(b.buf)) % len(b.buf)
	k := copy(out, b.buf[start:])
	if k < n {
		copy(out[k:], b.buf[:n-k])
	}
	return out, true
}
