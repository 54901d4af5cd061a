package stream

import (
	"errors"
	"fmt"
	"strconv"
)

// Nodes as listpack elements: what RDB_TYPE_STREAM_LISTPACKS(_2) stores
// per radix tree key. Integers are given in decimal, which a listpack
// encoder turns into the same integer encodings Redis writes.

// ErrCorrupt is wrapped by ImportNode's and Finish's errors.
var ErrCorrupt = errors.New("stream: corrupt node")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// EachNode calls fn with every node's master ID and listpack elements, in
// order.
func (s *Stream) EachNode(fn func(master ID, elems [][]byte)) {
	for _, nd := range s.nodes {
		fn(nd.master, nd.elements())
	}
}

// elements returns the node's listpack elements. Strings alias the
// node's buffer (see node).
func (nd *node) elements() [][]byte {
	out := make([][]byte, 0, 4+len(nd.mfields)+int(nd.count())*(5+2*len(nd.mfields)))
	out = append(out, itoa(nd.live), itoa(nd.deleted), itoa(int64(len(nd.mfields))))
	out = append(out, nd.mfields...)
	out = append(out, itoa(0))
	var fv [][]byte
	for off := 0; off < len(nd.buf); {
		id, flags, p := nd.head(off)
		out = append(out, itoa(int64(flags)), itoa(int64(id.Ms-nd.master.Ms)), itoa(int64(id.Seq-nd.master.Seq)))
		n := nd.nfields(p, flags)
		fv = append(fv[:0], make([][]byte, n)...)
		off = nd.fields(p, flags, fv)
		nf := int64(n / 2)
		count := nf + 3
		if flags&flagSameFields == 0 {
			out = append(out, itoa(nf))
			out = append(out, fv...)
			count += nf + 1
		} else {
			for j := 1; j < len(fv); j += 2 {
				out = append(out, fv[j])
			}
		}
		out = append(out, itoa(count))
	}
	return out
}

func parseInt(b []byte) (int64, error) {
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, corrupt("bad integer %q", b)
	}
	return v, nil
}

// ImportNode appends a node read from an RDB file or a RESTORE payload;
// nodes must come in ID order. elems are the listpack's elements (copied).
func (s *Stream) ImportNode(master ID, elems [][]byte) error {
	if len(elems) < 4 {
		return corrupt("listpack too short")
	}
	if n := len(s.nodes); n > 0 {
		if !s.nodes[n-1].last.Less(master) {
			return corrupt("nodes out of order")
		}
	}
	live0, err := parseInt(elems[0])
	if err != nil {
		return err
	}
	deleted0, err := parseInt(elems[1])
	if err != nil {
		return err
	}
	nmf, err := parseInt(elems[2])
	if err != nil {
		return err
	}
	if nmf < 0 || nmf > int64(len(elems)) || 3+nmf+1 > int64(len(elems)) {
		return corrupt("bad master field count")
	}
	p := 3
	mf := elems[p : p+int(nmf)]
	p += int(nmf)
	if z, err := parseInt(elems[p]); err != nil || z != 0 {
		return corrupt("bad master entry terminator")
	}
	p++
	size := 0
	for _, e := range elems[p:] {
		size += len(e) + 1
	}
	nd := newNode(master, nil, size, Limits{}, 0)
	nd.mfields = make([][]byte, len(mf))
	for i, f := range mf {
		nd.mfields[i] = append([]byte(nil), f...)
	}
	nd.bytes = 0
	var live, deleted int64
	var fv [][]byte
	for n := 0; p < len(elems); n++ {
		if p+3 > len(elems) {
			return corrupt("truncated entry")
		}
		f, err := parseInt(elems[p])
		if err != nil {
			return err
		}
		if f&^(flagDeleted|flagSameFields) != 0 {
			return corrupt("bad entry flags")
		}
		flags := byte(f)
		ms, err := parseInt(elems[p+1])
		if err != nil {
			return err
		}
		seq, err := parseInt(elems[p+2])
		if err != nil {
			return err
		}
		id := ID{master.Ms + uint64(ms), master.Seq + uint64(seq)}
		p += 3
		nf := nmf
		fv = fv[:0]
		if flags&flagSameFields == 0 {
			if p >= len(elems) {
				return corrupt("truncated entry")
			}
			if nf, err = parseInt(elems[p]); err != nil {
				return err
			}
			p++
			if nf < 0 || nf > int64(len(elems)) || int64(len(elems)-p) < 2*nf+1 {
				return corrupt("truncated entry fields")
			}
			fv = append(fv, elems[p:p+int(2*nf)]...)
			p += int(2 * nf)
		} else {
			if int64(len(elems)-p) < nf+1 {
				return corrupt("truncated entry values")
			}
			for i := int64(0); i < nf; i++ {
				fv = append(fv, nd.mfields[i], elems[p+int(i)])
			}
			p += int(nf)
		}
		cnt, err := parseInt(elems[p])
		if err != nil {
			return err
		}
		want := nf + 3
		if flags&flagSameFields == 0 {
			want += nf + 1
		}
		if cnt != want {
			return corrupt("bad entry lp-count")
		}
		p++
		if n > 0 && !nd.last.Less(id) {
			return corrupt("entries out of order")
		}
		if n == 0 && id.Less(master) {
			return corrupt("entry before master ID")
		}
		if flags&flagDeleted != 0 {
			deleted++
		} else {
			live++
		}
		nd.bytes += nd.entrySize(flags, id, fv)
		nd.appendEntry(int64(n), flags, id, fv)
	}
	if live+deleted == 0 || live != live0 || deleted != deleted0 || live == 0 {
		return corrupt("node counters do not match its entries")
	}
	nd.live, nd.deleted = live, deleted
	nd.bytes += lpHeaderSize + lpEndSize + nd.masterSize()
	nd.seal()
	s.nodes = append(s.nodes, nd)
	s.length += uint64(live)
	return nil
}

// Meta is a stream's metadata as RDB stores it.
type Meta struct {
	Length                        uint64
	LastID, FirstID, MaxDeletedID ID
	EntriesAdded                  uint64
	// V2 is set for RDB_TYPE_STREAM_LISTPACKS_2; otherwise FirstID,
	// MaxDeletedID and EntriesAdded are derived as Redis does.
	V2 bool
}

// SetMeta sets the metadata once every node is imported, checking the
// length against the nodes.
func (s *Stream) SetMeta(m Meta) error {
	if m.Length != s.length {
		return corrupt("stream length %d does not match its %d entries", m.Length, s.length)
	}
	s.LastID = m.LastID
	if m.V2 {
		s.FirstID, s.MaxDeletedID, s.EntriesAdded = m.FirstID, m.MaxDeletedID, m.EntriesAdded
	} else {
		s.MaxDeletedID, s.EntriesAdded = ID{}, s.length
		s.FirstID = s.EdgeID(true, true)
		if s.length == 0 {
			s.FirstID = MaxID
		}
	}
	if len(s.nodes) > 0 {
		if s.LastID.Less(s.nodes[len(s.nodes)-1].last) {
			return corrupt("last ID precedes the last entry")
		}
	}
	return nil
}

// ImportPending adds a group's pending entry read from RDB (its owner is
// set by ImportConsumerPending).
func (g *Group) ImportPending(id ID, deliveryTime int64, count uint64) error {
	if g.pel.find(id) != nil {
		return corrupt("duplicated global PEL entry")
	}
	g.pel.insert(&NACK{ID: id, DeliveryTime: deliveryTime, DeliveryCount: count})
	return nil
}

// ImportConsumer adds a consumer read from RDB.
func (g *Group) ImportConsumer(name string, seen int64) (*Consumer, error) {
	if _, ok := g.consumers[name]; ok {
		return nil, corrupt("duplicate stream consumer")
	}
	return g.addConsumer(name, seen), nil
}

// ImportConsumerPending gives the group's pending entry id to c.
func (g *Group) ImportConsumerPending(c *Consumer, id ID) error {
	na := g.pel.find(id)
	if na == nil {
		return corrupt("consumer PEL entry not in the group PEL")
	}
	if na.Consumer != nil {
		return corrupt("PEL entry owned twice")
	}
	na.Consumer = c
	c.pel.insert(na)
	return nil
}

// CheckOwners reports a pending entry left without an owner.
func (g *Group) CheckOwners() error {
	for _, na := range g.pel.items {
		if na.Consumer == nil {
			return corrupt("PEL entry without a consumer")
		}
	}
	return nil
}
