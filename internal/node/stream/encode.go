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

// elements returns the node's listpack elements.
func (nd *node) elements() [][]byte {
	out := make([][]byte, 0, 4+len(nd.mfields)+len(nd.entries)*(5+2*len(nd.mfields)))
	out = append(out, itoa(nd.live), itoa(nd.deleted), itoa(int64(len(nd.mfields))))
	out = append(out, nd.mfields...)
	out = append(out, itoa(0))
	for i := range nd.entries {
		e := &nd.entries[i]
		out = append(out, itoa(e.flags), itoa(int64(e.id.Ms-nd.master.Ms)), itoa(int64(e.id.Seq-nd.master.Seq)))
		fv := nd.fv(e)
		nf := int64(len(fv) / 2)
		count := nf + 3
		if e.flags&flagSameFields == 0 {
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
// nodes must come in ID order. elems are the listpack's elements (kept).
func (s *Stream) ImportNode(master ID, elems [][]byte) error {
	if len(elems) < 4 {
		return corrupt("listpack too short")
	}
	if n := len(s.nodes); n > 0 {
		last := s.nodes[n-1]
		if !last.entries[len(last.entries)-1].id.Less(master) {
			return corrupt("nodes out of order")
		}
	}
	nd := &node{master: master}
	var err error
	if nd.live, err = parseInt(elems[0]); err != nil {
		return err
	}
	if nd.deleted, err = parseInt(elems[1]); err != nil {
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
	nd.mfields = elems[p : p+int(nmf) : p+int(nmf)]
	p += int(nmf)
	if z, err := parseInt(elems[p]); err != nil || z != 0 {
		return corrupt("bad master entry terminator")
	}
	p++
	var live, deleted int64
	prev := ID{}
	for p < len(elems) {
		if p+3 > len(elems) {
			return corrupt("truncated entry")
		}
		var e entry
		if e.flags, err = parseInt(elems[p]); err != nil {
			return err
		}
		if e.flags&^(flagDeleted|flagSameFields) != 0 {
			return corrupt("bad entry flags")
		}
		ms, err := parseInt(elems[p+1])
		if err != nil {
			return err
		}
		seq, err := parseInt(elems[p+2])
		if err != nil {
			return err
		}
		e.id = ID{master.Ms + uint64(ms), master.Seq + uint64(seq)}
		p += 3
		nf := nmf
		if e.flags&flagSameFields == 0 {
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
			e.at, e.n = int32(len(nd.fvs)), int32(2*nf)
			nd.fvs = append(nd.fvs, elems[p:p+int(2*nf)]...)
			p += int(2 * nf)
		} else {
			if int64(len(elems)-p) < nf+1 {
				return corrupt("truncated entry values")
			}
			e.at, e.n = int32(len(nd.fvs)), int32(2*nf)
			for i := int64(0); i < nf; i++ {
				nd.fvs = append(nd.fvs, nd.mfields[i], elems[p+int(i)])
			}
			p += int(nf)
		}
		cnt, err := parseInt(elems[p])
		if err != nil {
			return err
		}
		want := nf + 3
		if e.flags&flagSameFields == 0 {
			want += nf + 1
		}
		if cnt != want {
			return corrupt("bad entry lp-count")
		}
		p++
		if len(nd.entries) > 0 && !prev.Less(e.id) {
			return corrupt("entries out of order")
		}
		if len(nd.entries) == 0 && e.id.Less(master) {
			return corrupt("entry before master ID")
		}
		prev = e.id
		if e.flags&flagDeleted != 0 {
			deleted++
		} else {
			live++
		}
		nd.entries = append(nd.entries, e)
	}
	if len(nd.entries) == 0 || live != nd.live || deleted != nd.deleted || live == 0 {
		return corrupt("node counters do not match its entries")
	}
	nd.bytes = lpHeaderSize + lpEndSize + nd.masterSize()
	for i := range nd.entries {
		nd.bytes += nd.entrySize(&nd.entries[i])
	}
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
		last := s.nodes[len(s.nodes)-1]
		if s.LastID.Less(last.entries[len(last.entries)-1].id) {
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
