package stream

import (
	"errors"
	"strconv"

	"github.com/shardis/shardis/internal/node/value"
)

// XCLAIM, XAUTOCLAIM and XPENDING: their grammars and their work on a
// group's PEL (Redis's xclaimCommand, xautoclaimCommand and
// xpendingCommand).

// ClaimArgs are XCLAIM's arguments after the consumer.
type ClaimArgs struct {
	MinIdle int64
	IDs     []ID
	// Delivery is the new delivery time (IDLE or TIME; -1: now).
	Delivery int64
	// Retry is RETRYCOUNT (-1: none).
	Retry         int64
	Force, JustID bool
	LastID        ID
}

// ParseClaim parses XCLAIM key group consumer min-idle-time id [id ...]
// [IDLE ms] [TIME ms] [RETRYCOUNT n] [FORCE] [JUSTID] [LASTID id]; IDLE is
// taken relative to now.
func ParseClaim(args [][]byte, now int64) (ClaimArgs, error) {
	a := ClaimArgs{Delivery: -1, Retry: -1}
	n, ok := value.ParseInt(args[4])
	if !ok {
		return a, errors.New("ERR Invalid min-idle-time argument for XCLAIM")
	}
	a.MinIdle = max(n, 0)
	j := 5
	for ; j < len(args); j++ {
		id, _, err := Parse(args[j], ParseOptions{Strict: true})
		if err != nil {
			break
		}
		a.IDs = append(a.IDs, id)
	}
	for ; j < len(args); j++ {
		more := len(args) - 1 - j
		o := args[j]
		if eqFold(o, "force") {
			a.Force = true
			continue
		}
		if eqFold(o, "justid") {
			a.JustID = true
			continue
		}
		if more == 0 {
			return a, errors.New("ERR Unrecognized XCLAIM option '" + string(o) + "'")
		}
		j++
		var err error
		switch {
		case eqFold(o, "idle"):
			n, err = claimInt(args[j], "IDLE")
			a.Delivery = now - n
		case eqFold(o, "time"):
			a.Delivery, err = claimInt(args[j], "TIME")
		case eqFold(o, "retrycount"):
			a.Retry, err = claimInt(args[j], "RETRYCOUNT")
		case eqFold(o, "lastid"):
			a.LastID, err = ParseID(args[j], 0, true)
		default:
			err = errors.New("ERR Unrecognized XCLAIM option '" + string(o) + "'")
		}
		if err != nil {
			return a, err
		}
	}
	if a.Delivery < 0 || a.Delivery > now {
		a.Delivery = now
	}
	return a, nil
}

// claimInt parses the integer of XCLAIM's option name.
func claimInt(a []byte, name string) (int64, error) {
	n, ok := value.ParseInt(a)
	if !ok {
		return 0, errors.New("ERR Invalid " + name + " option argument for XCLAIM")
	}
	return n, nil
}

// ClaimResult is what a claim did.
type ClaimResult struct {
	// Entries are the claimed entries.
	Entries []Entry
	// Deleted are pending entries dropped because their stream entry is
	// gone (XAUTOCLAIM's third reply element).
	Deleted []ID
	// Next is XAUTOCLAIM's cursor.
	Next ID
	// Dirty counts the changes; Created reports a new consumer.
	Dirty   int
	Created bool
}

// claimer claims entries for one consumer, created when the first entry
// is claimed.
type claimer struct {
	s     *Stream
	g     *Group
	name  []byte
	now   int64
	log   *Log
	cons  *Consumer
	res   ClaimResult
	claim func(na *NACK)
}

// take moves na to the consumer (creating it first) and records it.
func (c *claimer) take(na *NACK, fv [][]byte) {
	if c.cons == nil {
		c.cons, c.res.Created = c.g.Touch(c.name, c.now)
		if c.res.Created {
			c.res.Dirty++
		}
	}
	c.claim(na)
	c.g.Assign(na, c.cons)
	c.res.Entries = append(c.res.Entries, Entry{ID: na.ID, FV: fv})
	c.log.claim(c.g, na)
	c.res.Dirty++
}

// drop removes na, whose stream entry is gone.
func (c *claimer) drop(na *NACK) {
	c.log.claim(c.g, na)
	c.res.Dirty++
	c.g.Drop(na)
	c.res.Deleted = append(c.res.Deleted, na.ID)
}

// Claim is XCLAIM on g for consumer (Redis's xclaimCommand after
// parsing); log (nil: none) collects what replicas receive.
func (s *Stream) Claim(g *Group, consumer []byte, a ClaimArgs, now int64, log *Log) ClaimResult {
	propLast := false
	if g.LastID.Less(a.LastID) {
		g.LastID = a.LastID
		propLast = true
	}
	c := &claimer{s: s, g: g, name: consumer, now: now, log: log, claim: func(na *NACK) {
		na.DeliveryTime = a.Delivery
		if a.Retry >= 0 {
			na.DeliveryCount = uint64(a.Retry)
		} else if !a.JustID {
			na.DeliveryCount++
		}
	}}
	for _, id := range a.IDs {
		na := g.FindPending(id)
		fv, exists := s.Get(id)
		if !exists {
			if na != nil {
				c.drop(na)
				propLast = false
			}
			continue
		}
		if a.Force && na == nil {
			na = g.AddPending(id, 0)
		}
		if na == nil || na.Consumer != nil && a.MinIdle != 0 && now-na.DeliveryTime < a.MinIdle {
			continue
		}
		c.take(na, fv)
		propLast = false
	}
	if propLast {
		log.SetID(g)
		c.res.Dirty++
	}
	c.res.Deleted = nil
	return c.res
}

// AutoClaimArgs are XAUTOCLAIM's arguments after the consumer.
type AutoClaimArgs struct {
	MinIdle, Count int64
	Start          ID
	JustID         bool
}

// ParseAutoClaim parses XAUTOCLAIM key group consumer min-idle-time start
// [COUNT count] [JUSTID].
func ParseAutoClaim(args [][]byte) (AutoClaimArgs, error) {
	a := AutoClaimArgs{Count: 100}
	n, ok := value.ParseInt(args[4])
	if !ok {
		return a, errors.New("ERR Invalid min-idle-time argument for XAUTOCLAIM")
	}
	a.MinIdle = max(n, 0)
	var err error
	if a.Start, err = ParseStart(args[5]); err != nil {
		return a, err
	}
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case eqFold(args[j], "count") && more > 0:
			n, ok := value.ParseInt(args[j+1])
			if !ok || n < 1 || n > (1<<63-1)/16 {
				return a, errors.New("ERR COUNT must be > 0")
			}
			a.Count = n
			j++
		case eqFold(args[j], "justid"):
			a.JustID = true
		default:
			return a, ErrSyntax
		}
	}
	return a, nil
}

// autoClaimAttempts is Redis's attempts_factor: XAUTOCLAIM looks at most
// COUNT times this many pending entries.
const autoClaimAttempts = 10

// AutoClaim is XAUTOCLAIM on g for consumer (Redis's xautoclaimCommand
// after parsing).
func (s *Stream) AutoClaim(g *Group, consumer []byte, a AutoClaimArgs, now int64, log *Log) ClaimResult {
	attempts, count := a.Count*autoClaimAttempts, a.Count
	c := &claimer{s: s, g: g, name: consumer, now: now, log: log, claim: func(na *NACK) {
		na.DeliveryTime = now
		if !a.JustID {
			na.DeliveryCount++
		}
	}}
	g.Pending(a.Start, func(na *NACK) bool {
		if attempts == 0 || count == 0 {
			c.res.Next = na.ID
			return false
		}
		attempts--
		fv, exists := s.Get(na.ID)
		switch {
		case !exists:
			c.drop(na)
			count--
		case a.MinIdle != 0 && now-na.DeliveryTime < a.MinIdle:
		default:
			c.take(na, fv)
			count--
		}
		return true
	})
	return c.res
}

// PendingArgs are XPENDING's arguments.
type PendingArgs struct {
	// Summary is the short form (XPENDING key group).
	Summary        bool
	Start, End     ID
	Count, MinIdle int64
	// Consumer limits the extended form to one consumer (nil: all).
	Consumer []byte
}

// ParsePending parses XPENDING key group [[IDLE min-idle-time] start end
// count [consumer]].
func ParsePending(args [][]byte) (PendingArgs, error) {
	a := PendingArgs{Summary: len(args) == 3}
	if a.Summary {
		return a, nil
	}
	if len(args) < 6 || len(args) > 9 {
		return a, ErrSyntax
	}
	si := 3
	if eqFold(args[3], "idle") {
		n, ok := value.ParseInt(args[4])
		if !ok {
			return a, ErrNotInt
		}
		a.MinIdle = n
		if len(args) < 8 {
			return a, ErrSyntax
		}
		si += 2
	}
	n, ok := value.ParseInt(args[si+2])
	if !ok {
		return a, ErrNotInt
	}
	a.Count = max(n, 0)
	var err error
	if a.Start, a.End, err = ParseRange(args[si], args[si+1]); err != nil {
		return a, err
	}
	if si+3 < len(args) {
		a.Consumer = args[si+3]
	}
	return a, nil
}

// PendingRange is the extended XPENDING: the pending entries of
// [a.Start, a.End], idle for at least a.MinIdle at now, at most a.Count.
func (g *Group) PendingRange(a PendingArgs, now int64) []*NACK {
	iter := g.Pending
	if a.Consumer != nil {
		cons := g.Consumer(string(a.Consumer))
		if cons == nil {
			return nil
		}
		iter = cons.Pending
	}
	var out []*NACK
	if a.Count <= 0 {
		return nil
	}
	iter(a.Start, func(na *NACK) bool {
		if a.End.Less(na.ID) {
			return false
		}
		if a.MinIdle != 0 && now-na.DeliveryTime < a.MinIdle {
			return true
		}
		out = append(out, na)
		return int64(len(out)) < a.Count
	})
	return out
}

// PendingReply shapes XPENDING's reply as data (see Reply): the summary
// [count, first, last, [[consumer, count] ...]] or the extended
// [[id, consumer, idle, deliveries] ...].
func (g *Group) PendingReply(a PendingArgs, now int64) any {
	if !a.Summary {
		nacks := g.PendingRange(a, now)
		out := make([]any, len(nacks))
		for i, na := range nacks {
			out[i] = []any{na.ID, na.Consumer.Name, max(now-na.DeliveryTime, 0), int64(na.DeliveryCount)}
		}
		return out
	}
	if g.PendingCount() == 0 {
		return []any{int64(0), nil, nil, NullArray{}}
	}
	var owners []any
	for _, n := range g.ConsumerNames() {
		if k := g.Consumer(n).PendingCount(); k > 0 {
			owners = append(owners, []any{n, strconv.Itoa(k)})
		}
	}
	if owners == nil {
		owners = []any{}
	}
	return []any{int64(g.PendingCount()), g.FirstPending().ID, g.LastPending().ID, owners}
}
