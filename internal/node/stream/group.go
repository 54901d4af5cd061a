package stream

import (
	"sort"
)

// NACK is a pending entry: delivered to a consumer, not yet acknowledged.
// The group's PEL and its consumer's PEL share it.
type NACK struct {
	ID ID
	// DeliveryTime is the last delivery's unix ms.
	DeliveryTime int64
	// DeliveryCount is how many times it was delivered.
	DeliveryCount uint64
	// Consumer owns it (nil only transiently, while XCLAIM FORCE creates
	// it, or while a loaded PEL is being resolved).
	Consumer *Consumer
}

// Consumer is a consumer of a group.
type Consumer struct {
	Name string
	// SeenTime is when it was last active (unix ms).
	SeenTime int64
	pel      pel
}

// PendingCount is the number of entries it owns.
func (c *Consumer) PendingCount() int { return c.pel.len() }

// Pending calls fn for its pending entries with ID >= start, in order,
// until fn returns false.
func (c *Consumer) Pending(start ID, fn func(n *NACK) bool) { c.pel.from(start, fn) }

// Group is a consumer group.
type Group struct {
	Name string
	// LastID is the last delivered ID.
	LastID ID
	// EntriesRead is the logical read counter (InvalidEntriesRead when
	// unknown).
	EntriesRead int64
	pel         pel
	consumers   map[string]*Consumer
}

// PendingCount is the size of the group's PEL.
func (g *Group) PendingCount() int { return g.pel.len() }

// Pending calls fn for the group's pending entries with ID >= start, in
// order, until fn returns false.
func (g *Group) Pending(start ID, fn func(n *NACK) bool) { g.pel.from(start, fn) }

// FirstPending and LastPending return the PEL's edges (nil when empty).
func (g *Group) FirstPending() *NACK { return g.pel.first() }

// LastPending returns the PEL's last entry (nil when empty).
func (g *Group) LastPending() *NACK { return g.pel.last() }

// FindPending returns the pending entry id, or nil.
func (g *Group) FindPending(id ID) *NACK { return g.pel.find(id) }

// NumConsumers is the number of consumers.
func (g *Group) NumConsumers() int { return len(g.consumers) }

// ConsumerNames returns the consumer names in Redis's (byte) order.
func (g *Group) ConsumerNames() []string {
	names := make([]string, 0, len(g.consumers))
	for n := range g.consumers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Consumer returns the named consumer, or nil.
func (g *Group) Consumer(name string) *Consumer { return g.consumers[name] }

// CreateConsumer adds a consumer seen at now; it returns nil when it
// exists already.
func (g *Group) CreateConsumer(name string, now int64) *Consumer {
	if _, ok := g.consumers[name]; ok {
		return nil
	}
	return g.addConsumer(name, now)
}

func (g *Group) addConsumer(name string, seen int64) *Consumer {
	c := &Consumer{Name: name, SeenTime: seen}
	if g.consumers == nil {
		g.consumers = make(map[string]*Consumer)
	}
	g.consumers[name] = c
	return c
}

// DeleteConsumer removes a consumer and its pending entries (from the
// group's PEL too) and returns how many it had.
func (g *Group) DeleteConsumer(c *Consumer) int {
	n := c.pel.len()
	c.pel.each(func(na *NACK) bool { g.pel.remove(na.ID); return true })
	delete(g.consumers, c.Name)
	return n
}

// Ack removes the pending entry id; it reports whether there was one.
func (g *Group) Ack(id ID) bool {
	na := g.pel.find(id)
	if na == nil {
		return false
	}
	g.pel.remove(id)
	if na.Consumer != nil {
		na.Consumer.pel.remove(id)
	}
	return true
}

// AckAll acknowledges ids (XACK) and returns how many were pending.
func (g *Group) AckAll(ids []ID) int {
	n := 0
	for _, id := range ids {
		if g.Ack(id) {
			n++
		}
	}
	return n
}

// Deliver records the delivery of id to c at now (a new NACK, or an
// existing one moved to c with its count reset to 1, as Redis's
// streamReplyWithRange does) and returns the NACK.
func (g *Group) Deliver(id ID, c *Consumer, now int64) *NACK {
	if na := g.pel.find(id); na != nil {
		if na.Consumer != nil {
			na.Consumer.pel.remove(id)
		}
		na.Consumer, na.DeliveryTime, na.DeliveryCount = c, now, 1
		c.pel.insert(na)
		return na
	}
	na := &NACK{ID: id, DeliveryTime: now, DeliveryCount: 1, Consumer: c}
	g.pel.insert(na)
	c.pel.insert(na)
	return na
}

// AddPending inserts a NACK without an owner (XCLAIM FORCE) and returns it.
func (g *Group) AddPending(id ID, deliveryTime int64) *NACK {
	na := &NACK{ID: id, DeliveryTime: deliveryTime}
	g.pel.insert(na)
	return na
}

// Assign moves na to c (removing it from its previous owner's PEL).
func (g *Group) Assign(na *NACK, c *Consumer) {
	if na.Consumer == c {
		return
	}
	if na.Consumer != nil {
		na.Consumer.pel.remove(na.ID)
	}
	na.Consumer = c
	c.pel.insert(na)
}

// Drop removes the pending entry na from the group and its owner.
func (g *Group) Drop(na *NACK) {
	g.pel.remove(na.ID)
	if na.Consumer != nil {
		na.Consumer.pel.remove(na.ID)
	}
}

// Groups and the stream.

// GroupNames returns the group names in Redis's (byte) order.
func (s *Stream) GroupNames() []string {
	names := make([]string, 0, len(s.groups))
	for n := range s.groups {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NumGroups is the number of consumer groups.
func (s *Stream) NumGroups() int { return len(s.groups) }

// Group returns the named group, or nil.
func (s *Stream) Group(name string) *Group { return s.groups[name] }

// CreateGroup adds a group; it returns nil when the name exists.
func (s *Stream) CreateGroup(name string, last ID, entriesRead int64) *Group {
	if _, ok := s.groups[name]; ok {
		return nil
	}
	if s.groups == nil {
		s.groups = make(map[string]*Group)
	}
	g := &Group{Name: name, LastID: last, EntriesRead: entriesRead}
	s.groups[name] = g
	return g
}

// DestroyGroup removes a group; it reports whether it existed.
func (s *Stream) DestroyGroup(name string) bool {
	if _, ok := s.groups[name]; !ok {
		return false
	}
	delete(s.groups, name)
	return true
}

// AdvanceGroup moves g's last delivered ID to id (an entry being served
// beyond it) and updates its read counter as Redis's streamReplyWithRange.
func (s *Stream) AdvanceGroup(g *Group, id ID) {
	if !g.LastID.Less(id) {
		return
	}
	if g.EntriesRead != InvalidEntriesRead && !s.RangeHasTombstones(&id, nil) {
		g.EntriesRead++
	} else if s.EntriesAdded != 0 {
		g.EntriesRead = s.EstimateDistance(id)
	}
	g.LastID = id
}

// pel is a pending entries list: NACKs ordered by ID.
type pel struct {
	items []*NACK
}

func (p *pel) len() int { return len(p.items) }

func (p *pel) search(id ID) int {
	return sort.Search(len(p.items), func(i int) bool { return !p.items[i].ID.Less(id) })
}

func (p *pel) find(id ID) *NACK {
	i := p.search(id)
	if i < len(p.items) && p.items[i].ID == id {
		return p.items[i]
	}
	return nil
}

func (p *pel) insert(n *NACK) {
	if k := len(p.items); k == 0 || p.items[k-1].ID.Less(n.ID) {
		p.items = append(p.items, n)
		return
	}
	i := p.search(n.ID)
	if i < len(p.items) && p.items[i].ID == n.ID {
		p.items[i] = n
		return
	}
	p.items = append(p.items, nil)
	copy(p.items[i+1:], p.items[i:])
	p.items[i] = n
}

func (p *pel) remove(id ID) {
	i := p.search(id)
	if i < len(p.items) && p.items[i].ID == id {
		if i == 0 {
			p.items[0] = nil
			p.items = p.items[1:]
			return
		}
		p.items = append(p.items[:i], p.items[i+1:]...)
	}
}

func (p *pel) first() *NACK {
	if len(p.items) == 0 {
		return nil
	}
	return p.items[0]
}

func (p *pel) last() *NACK {
	if len(p.items) == 0 {
		return nil
	}
	return p.items[len(p.items)-1]
}

// from calls fn for the NACKs with ID >= start until fn returns false.
// fn may remove the NACK it is given.
func (p *pel) from(start ID, fn func(n *NACK) bool) {
	i := p.search(start)
	for i < len(p.items) {
		n := p.items[i]
		if !fn(n) {
			return
		}
		if i < len(p.items) && p.items[i] == n {
			i++
		} else {
			// n was removed: continue at the first ID after it.
			i = p.search(n.ID)
		}
	}
}

func (p *pel) each(fn func(n *NACK) bool) {
	for _, n := range append([]*NACK(nil), p.items...) {
		if !fn(n) {
			return
		}
	}
}
