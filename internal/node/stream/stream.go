package stream

import (
	"errors"
	"math"
	"sort"

	"github.com/shardis/shardis/internal/node/value"
)

// Entry flags, as Redis stores them in a listpack entry.
const (
	flagDeleted    = 1
	flagSameFields = 2
)

// maxListpackSize is STREAM_LISTPACK_MAX_SIZE.
const maxListpackSize = 1 << 30

// Errors of Append, with Redis's reply texts.
var (
	ErrIDTooSmall = errors.New("ERR The ID specified in XADD is equal or smaller than the target stream top item")
	ErrTooLarge   = errors.New("ERR Elements are too large to be stored")
)

// Limits are the node size thresholds (stream-node-max-bytes and
// stream-node-max-entries; 0 means no limit of that kind).
type Limits struct {
	NodeMaxBytes   int64
	NodeMaxEntries int64
}

// DefaultLimits are Redis's defaults.
var DefaultLimits = Limits{NodeMaxBytes: 4096, NodeMaxEntries: 100}

// Stream is a stream value: entries, metadata and consumer groups.
type Stream struct {
	nodes  []*node // ordered by master ID; nodes are never empty
	length uint64
	// LastID is the last generated ID (last_id), zero when none.
	LastID ID
	// FirstID is the first valid entry's ID, zero when empty (first_id,
	// recorded-first-entry-id).
	FirstID ID
	// MaxDeletedID is the greatest ID deleted by XDEL
	// (max_deleted_entry_id).
	MaxDeletedID ID
	// EntriesAdded counts every entry ever added (entries_added).
	EntriesAdded uint64
	groups       map[string]*Group
}

// New returns an empty stream.
func New() *Stream { return &Stream{} }

// TypeName is "stream".
func (s *Stream) TypeName() string { return "stream" }

// Encoding is "stream".
func (s *Stream) Encoding() string { return "stream" }

// Length is the number of valid entries.
func (s *Stream) Length() int { return int(s.length) }

// Len is the number of valid entries (XLEN); 0 for a nil (missing)
// stream.
func (s *Stream) Len() uint64 {
	if s == nil {
		return 0
	}
	return s.length
}

// Nodes is the number of radix tree keys (listpacks).
func (s *Stream) Nodes() int { return len(s.nodes) }

// MemUsage estimates the bytes used (MEMORY USAGE): the listpacks, the
// radix tree and the consumer groups.
func (s *Stream) MemUsage() int64 {
	n := int64(64)
	for _, nd := range s.nodes {
		n += int64(nd.bytes) + 48
	}
	for name, g := range s.groups {
		n += int64(len(name)) + 64 + int64(g.pel.len())*40
		for cn := range g.consumers {
			n += int64(len(cn)) + 48
		}
	}
	return n
}

// Clone returns a deep copy (COPY and snapshots); the master field
// names, never changed, are shared.
func (s *Stream) Clone() value.Value {
	c := *s
	c.nodes = make([]*node, len(s.nodes))
	for i, nd := range s.nodes {
		c.nodes[i] = nd.clone()
	}
	c.groups = nil
	for _, name := range s.GroupNames() {
		g := s.groups[name]
		ng := c.CreateGroup(name, g.LastID, g.EntriesRead)
		for _, cn := range g.ConsumerNames() {
			oc := g.consumers[cn]
			nc := ng.addConsumer(cn, oc.SeenTime)
			_ = nc
		}
		g.pel.each(func(n *NACK) bool {
			nn := &NACK{ID: n.ID, DeliveryTime: n.DeliveryTime, DeliveryCount: n.DeliveryCount}
			ng.pel.insert(nn)
			if n.Consumer != nil {
				nc := ng.consumers[n.Consumer.Name]
				nn.Consumer = nc
				nc.pel.insert(nn)
			}
			return true
		})
	}
	return &c
}

// nodeIndex returns the index of the last node whose master ID is <= id,
// or -1 when id precedes every node.
func (s *Stream) nodeIndex(id ID) int {
	i := sort.Search(len(s.nodes), func(i int) bool { return id.Less(s.nodes[i].master) })
	return i - 1
}

// masterSize is the size of the master entry's part of the listpack.
func (nd *node) masterSize() int {
	n := lpIntSize(nd.live) + lpIntSize(nd.deleted) + lpIntSize(int64(len(nd.mfields))) + lpIntSize(0)
	for _, f := range nd.mfields {
		n += lpStrSize(f)
	}
	return n
}

// entrySize is the listpack size of an entry of nd (fv holds its fields
// and values, with flagSameFields too).
func (nd *node) entrySize(flags byte, id ID, fv [][]byte) int {
	n := lpIntSize(int64(flags)) + lpIntSize(int64(id.Ms-nd.master.Ms)) + lpIntSize(int64(id.Seq-nd.master.Seq))
	nf := int64(len(fv) / 2)
	count := nf + 3
	if flags&flagSameFields == 0 {
		n += lpIntSize(nf)
		count += nf + 1
		for _, b := range fv {
			n += lpStrSize(b)
		}
	} else {
		for i := 1; i < len(fv); i += 2 {
			n += lpStrSize(fv[i])
		}
	}
	return n + lpIntSize(count)
}

// setCounts changes the master entry's counters, keeping bytes exact.
func (nd *node) setCounts(live, deleted int64) {
	nd.bytes += lpIntSize(live) - lpIntSize(nd.live) + lpIntSize(deleted) - lpIntSize(nd.deleted)
	nd.live, nd.deleted = live, deleted
}

// NextID is the ID XADD * generates after last at time now (ms).
func NextID(last ID, now int64) (ID, bool) {
	if now >= 0 && uint64(now) > last.Ms {
		return ID{uint64(now), 0}, true
	}
	return last.Incr()
}

// Append adds an entry (Redis's streamAppendItem). fv holds field, value
// pairs and is copied. With idGiven the ID is id, or, when !seqGiven, id.Ms
// with the next free sequence; otherwise it is generated from now (unix
// ms). It returns the new entry's ID.
func (s *Stream) Append(fv [][]byte, id ID, idGiven, seqGiven bool, now int64, lim Limits) (ID, error) {
	var nid ID
	switch {
	case idGiven && seqGiven:
		nid = id
	case idGiven:
		if s.LastID.Ms == id.Ms {
			if s.LastID.Seq == math.MaxUint64 {
				return ID{}, ErrIDTooSmall
			}
			nid = ID{id.Ms, s.LastID.Seq + 1}
		} else {
			nid = ID{id.Ms, 0}
		}
	default:
		nid, _ = NextID(s.LastID, now)
	}
	if nid.Compare(s.LastID) <= 0 {
		return ID{}, ErrIDTooSmall
	}
	total := 0
	for _, b := range fv {
		total += len(b)
	}
	if total > maxListpackSize {
		return ID{}, ErrTooLarge
	}
	var nd *node
	if len(s.nodes) > 0 {
		nd = s.nodes[len(s.nodes)-1]
		maxBytes := lim.NodeMaxBytes
		if maxBytes <= 0 || maxBytes > maxListpackSize {
			maxBytes = maxListpackSize
		}
		if int64(nd.bytes)+int64(total) >= maxBytes {
			nd = nil
		} else if lim.NodeMaxEntries > 0 && nd.live+nd.deleted >= lim.NodeMaxEntries {
			nd = nil
		}
	}
	var flags byte = flagSameFields
	if nd == nil {
		if len(s.nodes) > 0 {
			s.nodes[len(s.nodes)-1].seal()
		}
		probe := node{master: nid}
		nd = newNode(nid, fv, probe.encodedSize(flags, nid, fv), lim, probe.entrySize(flags, nid, fv))
		s.nodes = append(s.nodes, nd)
	} else if len(nd.mfields) != len(fv)/2 {
		flags = 0
	} else {
		for i, f := range nd.mfields {
			if string(f) != string(fv[2*i]) {
				flags = 0
				break
			}
		}
	}
	nd.bytes += nd.entrySize(flags, nid, fv)
	nd.appendEntry(nd.count(), flags, nid, fv)
	nd.setCounts(nd.live+1, nd.deleted)
	s.length++
	s.EntriesAdded++
	s.LastID = nid
	if s.length == 1 {
		s.FirstID = nid
	}
	return nid, nil
}

// Range calls fn for the valid entries with start <= ID <= end, in order
// (reversed with rev), until fn returns false. fv is the entry's own (it
// may be kept) and must not be changed.
func (s *Stream) Range(start, end ID, rev bool, fn func(id ID, fv [][]byte) bool) {
	s.rangeHint(start, end, rev, 0, fn)
}

// rangeHint is Range, told that about hint entries will be taken (0: not
// known), which sizes the slices handed out.
func (s *Stream) rangeHint(start, end ID, rev bool, hint int, fn func(id ID, fv [][]byte) bool) {
	if end.Less(start) || len(s.nodes) == 0 {
		return
	}
	var sl slab
	sl.next = 2 * len(s.nodes[0].mfields) * min(max(hint, 1), 64)
	if !rev {
		ni := max(s.nodeIndex(start), 0)
		for ; ni < len(s.nodes); ni++ {
			nd := s.nodes[ni]
			if end.Less(nd.master) {
				return
			}
			if nd.last.Less(start) {
				continue
			}
			for off := nd.seek(start); off < len(nd.buf); {
				id, flags, p := nd.head(off)
				if flags&flagDeleted != 0 {
					if end.Less(id) {
						return
					}
					off = nd.skip(p, flags)
					continue
				}
				if end.Less(id) {
					return
				}
				fv := sl.take(nd.nfields(p, flags))
				off = nd.fields(p, flags, fv)
				if !fn(id, fv) {
					return
				}
			}
		}
		return
	}
	var offsArr [128]int32
	offs := offsArr[:0]
	for ni := s.nodeIndex(end); ni >= 0; ni-- {
		nd := s.nodes[ni]
		offs = offs[:0]
		stop := false
		for off := 0; off < len(nd.buf); {
			id, flags, p := nd.head(off)
			if end.Less(id) {
				break
			}
			if id.Less(start) {
				stop = true
			} else if flags&flagDeleted == 0 {
				offs = append(offs, int32(off))
			}
			off = nd.skip(p, flags)
		}
		for i := len(offs) - 1; i >= 0; i-- {
			id, flags, p := nd.head(int(offs[i]))
			fv := sl.take(nd.nfields(p, flags))
			nd.fields(p, flags, fv)
			if !fn(id, fv) {
				return
			}
		}
		if stop {
			return
		}
	}
}

// Get returns the fields of the valid entry id.
func (s *Stream) Get(id ID) (fv [][]byte, ok bool) {
	s.Range(id, id, false, func(_ ID, f [][]byte) bool { fv, ok = f, true; return false })
	return fv, ok
}

// Exists reports whether the valid entry id exists.
func (s *Stream) Exists(id ID) bool {
	_, ok := s.Get(id)
	return ok
}

// LastValid returns the last valid entry's ID (ok false when empty).
func (s *Stream) LastValid() (id ID, ok bool) {
	if len(s.nodes) > 0 {
		if nd := s.nodes[len(s.nodes)-1]; nd.buf[nd.lastOff]&flagDeleted == 0 {
			return nd.last, true
		}
	}
	s.Range(ID{}, MaxID, true, func(i ID, _ [][]byte) bool { id, ok = i, true; return false })
	return id, ok
}

// EdgeID is Redis's streamGetEdgeID: the first (or last) entry's ID,
// tombstones included unless skipTombstones; MaxID (first) or 0-0 (last)
// when there is none.
func (s *Stream) EdgeID(first, skipTombstones bool) ID {
	if skipTombstones {
		var id ID
		var ok bool
		s.Range(ID{}, MaxID, !first, func(i ID, _ [][]byte) bool { id, ok = i, true; return false })
		if ok {
			return id
		}
	} else if len(s.nodes) > 0 {
		if first {
			return s.nodes[0].first()
		}
		return s.nodes[len(s.nodes)-1].last
	}
	if first {
		return MaxID
	}
	return ID{}
}

// deleteEntry flags the valid entry id as deleted (removing its node
// when it was the node's last valid entry). It reports whether it did.
func (s *Stream) deleteEntry(id ID) bool {
	ni := s.nodeIndex(id)
	if ni < 0 {
		return false
	}
	nd := s.nodes[ni]
	off, ok := nd.find(id)
	if !ok || nd.buf[off]&flagDeleted != 0 {
		return false
	}
	if nd.live == 1 {
		s.nodes = append(s.nodes[:ni], s.nodes[ni+1:]...)
	} else {
		nd.buf[off] |= flagDeleted // same listpack size
		nd.setCounts(nd.live-1, nd.deleted+1)
	}
	s.length--
	return true
}

// Delete is XDEL: it deletes the valid entries among ids, updating the
// first ID and the maximal deleted ID, and returns how many went.
func (s *Stream) Delete(ids []ID) int {
	deleted, firstGone := 0, false
	for _, id := range ids {
		if !s.deleteEntry(id) {
			continue
		}
		if id == s.FirstID {
			firstGone = true
		}
		if s.MaxDeletedID.Less(id) {
			s.MaxDeletedID = id
		}
		deleted++
	}
	if deleted > 0 {
		if s.length == 0 {
			s.FirstID = ID{}
		} else if firstGone {
			s.FirstID = s.EdgeID(true, true)
		}
	}
	return deleted
}

// Trim strategies.
const (
	TrimNone = iota
	TrimMaxLen
	TrimMinID
)

// TrimArgs are XADD's and XTRIM's trimming options.
type TrimArgs struct {
	Strategy int
	MaxLen   int64
	MinID    ID
	// Approx (~) removes only whole nodes.
	Approx bool
	// Limit caps the entries removed (0: no cap).
	Limit int64
}

// Trim is Redis's streamTrim: it removes entries from the head and
// returns how many.
func (s *Stream) Trim(a TrimArgs) int64 {
	if a.Strategy == TrimNone {
		return 0
	}
	maxlen := uint64(max(a.MaxLen, 0))
	var deleted int64
	for len(s.nodes) > 0 {
		if a.Strategy == TrimMaxLen && s.length <= maxlen {
			break
		}
		nd := s.nodes[0]
		entries := nd.live
		if a.Limit != 0 && deleted+entries > a.Limit {
			break
		}
		var remove bool
		if a.Strategy == TrimMaxLen {
			remove = s.length-uint64(entries) >= maxlen
		} else {
			remove = nd.last.Less(a.MinID)
		}
		if remove {
			s.nodes = s.nodes[1:]
			s.length -= uint64(entries)
			deleted += entries
			continue
		}
		if a.Approx {
			break
		}
		var fromNode int64
		for off := 0; off < len(nd.buf); {
			id, flags, p := nd.head(off)
			var stop bool
			if a.Strategy == TrimMaxLen {
				stop = s.length <= maxlen
			} else {
				stop = !id.Less(a.MinID)
			}
			if stop {
				break
			}
			next := nd.skip(p, flags)
			if flags&flagDeleted == 0 {
				nd.buf[off] |= flagDeleted
				fromNode++
				s.length--
			}
			off = next
		}
		deleted += fromNode
		nd.setCounts(entries-fromNode, nd.deleted+fromNode)
		break
	}
	if len(s.nodes) > 0 && s.nodes[0].live == 0 {
		// Cannot happen through Redis's algorithm (a node whose every
		// entry goes is removed whole), kept as a guard.
		s.nodes = s.nodes[1:]
	}
	if s.length == 0 {
		s.FirstID = ID{}
	} else if deleted > 0 {
		s.FirstID = s.EdgeID(true, true)
	}
	return deleted
}

// RangeHasTombstones is Redis's streamRangeHasTombstones (start nil: 0-0,
// end nil: the maximal ID).
func (s *Stream) RangeHasTombstones(start, end *ID) bool {
	if s.length == 0 || s.MaxDeletedID.IsZero() {
		return false
	}
	if s.MaxDeletedID.Less(s.FirstID) {
		return false
	}
	st, en := ID{}, MaxID
	if start != nil {
		st = *start
	}
	if end != nil {
		en = *end
	}
	return !s.MaxDeletedID.Less(st) && !en.Less(s.MaxDeletedID)
}

// InvalidEntriesRead is SCG_INVALID_ENTRIES_READ.
const InvalidEntriesRead = -1

// EstimateDistance is Redis's streamEstimateDistanceFromFirstEverEntry:
// the logical read counter of id, or InvalidEntriesRead.
func (s *Stream) EstimateDistance(id ID) int64 {
	if s.EntriesAdded == 0 {
		return 0
	}
	if s.length == 0 && id.Compare(s.LastID) < 1 {
		return int64(s.EntriesAdded)
	}
	cmpLast := id.Compare(s.LastID)
	if cmpLast == 0 {
		return int64(s.EntriesAdded)
	} else if cmpLast > 0 {
		return InvalidEntriesRead
	}
	cmpFirst := id.Compare(s.FirstID)
	if s.MaxDeletedID.IsZero() || s.MaxDeletedID.Less(s.FirstID) {
		if cmpFirst < 0 {
			return int64(s.EntriesAdded - s.length)
		} else if cmpFirst == 0 {
			return int64(s.EntriesAdded - s.length + 1)
		}
	}
	return InvalidEntriesRead
}

// Lag is a group's lag as XINFO reports it (Redis's streamReplyWithCGLag);
// ok is false when it cannot be known (a null reply).
func (s *Stream) Lag(g *Group) (lag int64, ok bool) {
	if s.EntriesAdded == 0 {
		return 0, true
	}
	if g.EntriesRead != InvalidEntriesRead && !s.RangeHasTombstones(&g.LastID, nil) {
		return int64(s.EntriesAdded) - g.EntriesRead, true
	}
	er := s.EstimateDistance(g.LastID)
	if er != InvalidEntriesRead {
		return int64(s.EntriesAdded) - er, true
	}
	return 0, false
}
