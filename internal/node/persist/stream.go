package persist

import (
	"strconv"

	"github.com/shardis/shardis/internal/node/stream"
	"github.com/shardis/shardis/internal/rdb"
)

// Streams in RDB, DUMP payloads, AOF rewrites and digests.

func toRDBID(id stream.ID) rdb.StreamID   { return rdb.StreamID{Ms: id.Ms, Seq: id.Seq} }
func fromRDBID(id rdb.StreamID) stream.ID { return stream.ID{Ms: id.Ms, Seq: id.Seq} }

// streamToRDB converts a stream (its shard locked, or a snapshot's copy).
func streamToRDB(s *stream.Stream) *rdb.Stream {
	out := &rdb.Stream{
		Length: s.Len(), LastID: toRDBID(s.LastID), FirstID: toRDBID(s.FirstID),
		MaxDeletedID: toRDBID(s.MaxDeletedID), EntriesAdded: s.EntriesAdded, V2: true,
	}
	s.EachNode(func(master stream.ID, elems [][]byte) {
		out.Nodes = append(out.Nodes, rdb.StreamNode{Master: toRDBID(master), Elems: elems})
	})
	for _, name := range s.GroupNames() {
		g := s.Group(name)
		rg := rdb.StreamGroup{Name: []byte(name), LastID: toRDBID(g.LastID), EntriesRead: g.EntriesRead}
		g.Pending(stream.ID{}, func(na *stream.NACK) bool {
			rg.PEL = append(rg.PEL, rdb.StreamNACK{ID: toRDBID(na.ID), DeliveryTime: na.DeliveryTime, DeliveryCount: na.DeliveryCount})
			return true
		})
		for _, cn := range g.ConsumerNames() {
			c := g.Consumer(cn)
			rc := rdb.StreamConsumer{Name: []byte(cn), SeenTime: c.SeenTime}
			c.Pending(stream.ID{}, func(na *stream.NACK) bool {
				rc.PEL = append(rc.PEL, toRDBID(na.ID))
				return true
			})
			rg.Consumers = append(rg.Consumers, rc)
		}
		out.Groups = append(out.Groups, rg)
	}
	return out
}

// streamFromRDB builds a stream from a decoded value, checking it.
func streamFromRDB(v *rdb.Stream) (*stream.Stream, error) {
	s := stream.New()
	for _, n := range v.Nodes {
		if err := s.ImportNode(fromRDBID(n.Master), n.Elems); err != nil {
			return nil, err
		}
	}
	err := s.SetMeta(stream.Meta{
		Length: v.Length, LastID: fromRDBID(v.LastID), FirstID: fromRDBID(v.FirstID),
		MaxDeletedID: fromRDBID(v.MaxDeletedID), EntriesAdded: v.EntriesAdded, V2: v.V2,
	})
	if err != nil {
		return nil, err
	}
	for _, rg := range v.Groups {
		er := rg.EntriesRead
		last := fromRDBID(rg.LastID)
		if !v.V2 {
			er = s.EstimateDistance(last)
		}
		g := s.CreateGroup(string(rg.Name), last, er)
		if g == nil {
			return nil, stream.ErrCorrupt
		}
		for _, na := range rg.PEL {
			if err := g.ImportPending(fromRDBID(na.ID), na.DeliveryTime, na.DeliveryCount); err != nil {
				return nil, err
			}
		}
		for _, rc := range rg.Consumers {
			c, err := g.ImportConsumer(string(rc.Name), rc.SeenTime)
			if err != nil {
				return nil, err
			}
			for _, id := range rc.PEL {
				if err := g.ImportConsumerPending(c, fromRDBID(id)); err != nil {
					return nil, err
				}
			}
		}
		if err := g.CheckOwners(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// appendStreamCommands writes the commands that rebuild s at key, as
// Redis's rewriteStreamObject: XADD per entry (or an XADD MAXLEN 0 that
// leaves an empty stream), XSETID with the counters, then per group
// XGROUP CREATE and an XCLAIM per pending entry (XGROUP CREATECONSUMER for
// a consumer owning none).
func appendStreamCommands(b []byte, key []byte, s *stream.Stream) []byte {
	id := func(i stream.ID) []byte { return []byte(i.String()) }
	if s.Len() > 0 {
		s.Range(stream.ID{}, stream.MaxID, false, func(i stream.ID, fv [][]byte) bool {
			args := make([][]byte, 0, 3+len(fv))
			args = append(args, []byte("XADD"), key, id(i))
			args = append(args, fv...)
			b = AppendCommand(b, args...)
			return true
		})
	} else {
		b = AppendCommand(b, []byte("XADD"), key, []byte("MAXLEN"), []byte("0"), []byte("0-1"), []byte("x"), []byte("y"))
	}
	b = AppendCommand(b, []byte("XSETID"), key, id(s.LastID), []byte("ENTRIESADDED"),
		strconv.AppendUint(nil, s.EntriesAdded, 10), []byte("MAXDELETEDID"), id(s.MaxDeletedID))
	for _, name := range s.GroupNames() {
		g := s.Group(name)
		gn := []byte(name)
		b = AppendCommand(b, []byte("XGROUP"), []byte("CREATE"), key, gn, id(g.LastID),
			[]byte("ENTRIESREAD"), strconv.AppendInt(nil, g.EntriesRead, 10))
		for _, cn := range g.ConsumerNames() {
			c := g.Consumer(cn)
			if c.PendingCount() == 0 {
				b = AppendCommand(b, []byte("XGROUP"), []byte("CREATECONSUMER"), key, gn, []byte(cn))
				continue
			}
			c.Pending(stream.ID{}, func(na *stream.NACK) bool {
				b = AppendCommand(b, []byte("XCLAIM"), key, gn, []byte(cn), []byte("0"), id(na.ID),
					[]byte("TIME"), strconv.AppendInt(nil, na.DeliveryTime, 10),
					[]byte("RETRYCOUNT"), strconv.AppendUint(nil, na.DeliveryCount, 10),
					[]byte("JUSTID"), []byte("FORCE"))
				return true
			})
		}
	}
	return b
}
