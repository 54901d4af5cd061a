package rdb

import (
	"encoding/binary"
)

// Streams: RDB_TYPE_STREAM_LISTPACKS (15, Redis 5 to 6.2) is read,
// RDB_TYPE_STREAM_LISTPACKS_2 (19, Redis 7.0) is read and written. The
// radix tree's nodes are stored as they are: a 16-byte big-endian master
// ID and the node's listpack, here given as its elements (the caller,
// internal/node/stream, knows the entry layout inside).

// StreamID is a stream entry ID.
type StreamID struct{ Ms, Seq uint64 }

// StreamNode is one radix tree node: its master ID and listpack elements.
type StreamNode struct {
	Master StreamID
	Elems  [][]byte
}

// StreamNACK is a pending entry of a group.
type StreamNACK struct {
	ID            StreamID
	DeliveryTime  int64
	DeliveryCount uint64
}

// StreamConsumer is a consumer with the IDs it owns.
type StreamConsumer struct {
	Name     []byte
	SeenTime int64
	PEL      []StreamID
}

// StreamGroup is a consumer group.
type StreamGroup struct {
	Name   []byte
	LastID StreamID
	// EntriesRead is -1 when unknown (written as 2^64-1, as Redis does).
	EntriesRead int64
	PEL         []StreamNACK
	Consumers   []StreamConsumer
}

// Stream is a stream value.
type Stream struct {
	Nodes                         []StreamNode
	Length                        uint64
	LastID, FirstID, MaxDeletedID StreamID
	EntriesAdded                  uint64
	Groups                        []StreamGroup
	// V2 is false for a type 15 value: FirstID, MaxDeletedID,
	// EntriesAdded and the groups' EntriesRead were not stored.
	V2 bool
}

func appendStreamID(b []byte, id StreamID) []byte {
	b = binary.BigEndian.AppendUint64(b, id.Ms)
	return binary.BigEndian.AppendUint64(b, id.Seq)
}

// appendStream writes a type 19 body.
func appendStream(b []byte, s *Stream, compress bool, flush func([]byte) []byte) []byte {
	b = appendLen(b, uint64(len(s.Nodes)))
	var key []byte
	for _, n := range s.Nodes {
		key = appendStreamID(key[:0], n.Master)
		b = appendString(b, key, false)
		b = appendString(b, buildListpack(n.Elems), compress)
		b = flush(b)
	}
	b = appendLen(b, s.Length)
	b = appendLen(b, s.LastID.Ms)
	b = appendLen(b, s.LastID.Seq)
	b = appendLen(b, s.FirstID.Ms)
	b = appendLen(b, s.FirstID.Seq)
	b = appendLen(b, s.MaxDeletedID.Ms)
	b = appendLen(b, s.MaxDeletedID.Seq)
	b = appendLen(b, s.EntriesAdded)
	b = appendLen(b, uint64(len(s.Groups)))
	for _, g := range s.Groups {
		b = appendString(b, g.Name, compress)
		b = appendLen(b, g.LastID.Ms)
		b = appendLen(b, g.LastID.Seq)
		b = appendLen(b, uint64(g.EntriesRead))
		b = appendLen(b, uint64(len(g.PEL)))
		for _, n := range g.PEL {
			b = appendStreamID(b, n.ID)
			b = binary.LittleEndian.AppendUint64(b, uint64(n.DeliveryTime))
			b = appendLen(b, n.DeliveryCount)
		}
		b = appendLen(b, uint64(len(g.Consumers)))
		for _, c := range g.Consumers {
			b = appendString(b, c.Name, compress)
			b = binary.LittleEndian.AppendUint64(b, uint64(c.SeenTime))
			b = appendLen(b, uint64(len(c.PEL)))
			for _, id := range c.PEL {
				b = appendStreamID(b, id)
			}
		}
		b = flush(b)
	}
	return b
}

func (d *Decoder) readLen64() (uint64, error) {
	n, enc, err := d.readLen()
	if err != nil {
		return 0, err
	}
	if enc {
		return 0, corrupt("unexpected encoded length at offset %d", d.off)
	}
	return n, nil
}

func (d *Decoder) readLenID() (StreamID, error) {
	ms, err := d.readLen64()
	if err != nil {
		return StreamID{}, err
	}
	seq, err := d.readLen64()
	return StreamID{ms, seq}, err
}

func (d *Decoder) readRawID() (StreamID, error) {
	var buf [16]byte
	if err := d.readFull(buf[:]); err != nil {
		return StreamID{}, err
	}
	return StreamID{binary.BigEndian.Uint64(buf[:]), binary.BigEndian.Uint64(buf[8:])}, nil
}

func (d *Decoder) readMillis() (int64, error) {
	var buf [8]byte
	if err := d.readFull(buf[:]); err != nil {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint64(buf[:])), nil
}

// readStream reads a type 15 or 19 body.
func (d *Decoder) readStream(t byte) (*Value, error) {
	s := &Stream{V2: t == TypeStreamListpack2}
	n, err := d.readCount()
	if err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		key, err := d.ReadString()
		if err != nil {
			return nil, err
		}
		if len(key) != 16 {
			return nil, corrupt("stream node key entry is not the size of a stream ID")
		}
		lp, err := d.ReadString()
		if err != nil {
			return nil, err
		}
		elems, err := listpackEntries(lp)
		if err != nil {
			return nil, err
		}
		if len(elems) == 0 {
			return nil, corrupt("empty listpack inside stream")
		}
		s.Nodes = append(s.Nodes, StreamNode{
			Master: StreamID{binary.BigEndian.Uint64(key), binary.BigEndian.Uint64(key[8:])},
			Elems:  elems,
		})
	}
	if s.Length, err = d.readLen64(); err != nil {
		return nil, err
	}
	if s.LastID, err = d.readLenID(); err != nil {
		return nil, err
	}
	if s.V2 {
		if s.FirstID, err = d.readLenID(); err != nil {
			return nil, err
		}
		if s.MaxDeletedID, err = d.readLenID(); err != nil {
			return nil, err
		}
		if s.EntriesAdded, err = d.readLen64(); err != nil {
			return nil, err
		}
	}
	if s.Length != 0 && len(s.Nodes) == 0 {
		return nil, corrupt("stream length inconsistent with rax entries")
	}
	ng, err := d.readCount()
	if err != nil {
		return nil, err
	}
	for i := 0; i < ng; i++ {
		var g StreamGroup
		if g.Name, err = d.ReadString(); err != nil {
			return nil, err
		}
		if g.LastID, err = d.readLenID(); err != nil {
			return nil, err
		}
		g.EntriesRead = -1
		if s.V2 {
			er, err := d.readLen64()
			if err != nil {
				return nil, err
			}
			g.EntriesRead = int64(er)
		}
		np, err := d.readCount()
		if err != nil {
			return nil, err
		}
		for j := 0; j < np; j++ {
			var na StreamNACK
			if na.ID, err = d.readRawID(); err != nil {
				return nil, err
			}
			if na.DeliveryTime, err = d.readMillis(); err != nil {
				return nil, err
			}
			if na.DeliveryCount, err = d.readLen64(); err != nil {
				return nil, err
			}
			g.PEL = append(g.PEL, na)
		}
		nc, err := d.readCount()
		if err != nil {
			return nil, err
		}
		for j := 0; j < nc; j++ {
			var c StreamConsumer
			if c.Name, err = d.ReadString(); err != nil {
				return nil, err
			}
			if c.SeenTime, err = d.readMillis(); err != nil {
				return nil, err
			}
			np, err := d.readCount()
			if err != nil {
				return nil, err
			}
			for k := 0; k < np; k++ {
				id, err := d.readRawID()
				if err != nil {
					return nil, err
				}
				c.PEL = append(c.PEL, id)
			}
			g.Consumers = append(g.Consumers, c)
		}
		s.Groups = append(s.Groups, g)
	}
	return &Value{Kind: KindStream, Stream: s}, nil
}
