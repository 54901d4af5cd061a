// Package pubsub is the node's publish/subscribe registry: who listens
// on which channel, pattern and shard channel (Redis 7.0's sharded
// pub/sub), the confirmations of (P|S)(UN)SUBSCRIBE and the delivery of
// messages.
//
// Ordering: every change and every delivery happens under the hub's lock,
// and each appends its output to the subscriber's pushed stream before the
// lock is released. So a subscriber receives messages in publish order,
// and a confirmation is never overtaken by a message published after it.
// The subscriber (the node's client) is a small interface; the hub never
// sees a connection.
package pubsub

import (
	"sort"
	"sync"

	"github.com/shardis/shardis/internal/node/glob"
	"github.com/shardis/shardis/internal/resp"
)

// Subscriber is what the hub needs of a client. Values are compared as
// map keys: a pointer, or a struct holding one.
type Subscriber interface {
	comparable
	// Proto is the RESP version of the subscriber's replies (2 or 3).
	Proto() int
	// Push appends fn's output to the subscriber's pushed stream (a
	// message from another goroutine).
	Push(fn func(b []byte) []byte)
	// Confirm appends the subscriber's own pending replies and then fn's
	// output to its pushed stream, so that the confirmation keeps its
	// place among replies and messages.
	Confirm(fn func(b []byte) []byte)
	// SetSubscribed sets or clears the subscriber's pub/sub context (the
	// RESP2 restricted mode and CLIENT LIST's P flag).
	SetSubscribed(on bool)
}

// Kind is one of the three namespaces of subscriptions.
type Kind int

// The kinds of subscription.
const (
	Channel Kind = iota // SUBSCRIBE
	Pattern             // PSUBSCRIBE
	Shard               // SSUBSCRIBE
)

// confirm names each kind's confirmations.
var confirm = [3]struct{ sub, unsub string }{
	{"subscribe", "unsubscribe"},
	{"psubscribe", "punsubscribe"},
	{"ssubscribe", "sunsubscribe"},
}

// Hub holds the subscriptions of a server. The zero value is not usable;
// call New.
type Hub[S Subscriber] struct {
	mu sync.RWMutex
	// subs maps each kind's names to their subscribers.
	subs [3]map[string]map[S]struct{}
	// own maps a subscriber to its names per kind; a subscriber without
	// any subscription has no entry.
	own map[S]*[3]map[string]struct{}
}

// New returns an empty hub.
func New[S Subscriber]() *Hub[S] {
	h := &Hub[S]{own: make(map[S]*[3]map[string]struct{})}
	for k := range h.subs {
		h.subs[k] = make(map[string]map[S]struct{})
	}
	return h
}

// count is the number a confirmation reports: channels plus patterns, or
// the shard channels. The lock must be held.
func (h *Hub[S]) count(s S, k Kind) int {
	o := h.own[s]
	if o == nil {
		return 0
	}
	if k == Shard {
		return len(o[Shard])
	}
	return len(o[Channel]) + len(o[Pattern])
}

// anySubs reports whether s has a subscription of any kind. The lock must
// be held.
func (h *Hub[S]) anySubs(s S) bool {
	o := h.own[s]
	return o != nil && len(o[Channel])+len(o[Pattern])+len(o[Shard]) > 0
}

// add records s under name; the lock must be held.
func (h *Hub[S]) add(s S, k Kind, name string) {
	o := h.own[s]
	if o == nil {
		o = new([3]map[string]struct{})
		h.own[s] = o
	}
	if o[k] == nil {
		o[k] = make(map[string]struct{})
	}
	if _, ok := o[k][name]; ok {
		return
	}
	o[k][name] = struct{}{}
	m := h.subs[k][name]
	if m == nil {
		m = make(map[S]struct{})
		h.subs[k][name] = m
	}
	m[s] = struct{}{}
}

// drop removes s from name; the lock must be held.
func (h *Hub[S]) drop(s S, k Kind, name string) {
	if o := h.own[s]; o != nil {
		delete(o[k], name)
		if len(o[Channel])+len(o[Pattern])+len(o[Shard]) == 0 {
			delete(h.own, s)
		}
	}
	if m := h.subs[k][name]; m != nil {
		delete(m, s)
		if len(m) == 0 {
			delete(h.subs[k], name)
		}
	}
}

// Subscribe adds s to each name of kind k and queues one confirmation per
// name, in order with its messages.
func (h *Hub[S]) Subscribe(s S, k Kind, names []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, name := range names {
		h.add(s, k, name)
		s.SetSubscribed(true)
		h.confirm(s, confirm[k].sub, name, true, h.count(s, k))
	}
}

// Unsubscribe removes s from the names of kind k (from all of them, in
// sorted order, when names is empty) and confirms each; with nothing to
// remove it confirms once with a null name.
func (h *Hub[S]) Unsubscribe(s S, k Kind, names []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(names) == 0 {
		if o := h.own[s]; o != nil {
			for n := range o[k] {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		if len(names) == 0 {
			h.confirm(s, confirm[k].unsub, "", false, h.count(s, k))
		}
	}
	for _, name := range names {
		h.drop(s, k, name)
		h.confirm(s, confirm[k].unsub, name, true, h.count(s, k))
	}
	if !h.anySubs(s) {
		s.SetSubscribed(false)
	}
}

// confirm queues "<kind> <name> <count>" (a null name when !hasName).
func (h *Hub[S]) confirm(s S, kind, name string, hasName bool, n int) {
	s.Confirm(func(b []byte) []byte {
		b = resp.AppendPushLen(b, s.Proto(), 3)
		b = resp.AppendBulkString(b, kind)
		if hasName {
			b = resp.AppendBulkString(b, name)
		} else {
			b = resp.AppendNull(b, s.Proto())
		}
		return resp.AppendInt(b, int64(n))
	})
}

// UnsubscribeAll drops every subscription of s silently (a closing or
// RESET client).
func (h *Hub[S]) UnsubscribeAll(s S) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if o := h.own[s]; o != nil {
		for k := range o {
			for name := range o[k] {
				h.drop(s, Kind(k), name)
			}
		}
	}
	delete(h.own, s)
	s.SetSubscribed(false)
}

// RemoveShards unsubscribes every subscriber from the shard channels
// drop selects, in sorted order, each subscriber receiving
// "sunsubscribe <channel> <count>" (Redis's removeChannelsInSlot when a
// slot leaves the node).
func (h *Hub[S]) RemoveShards(drop func(channel string) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var names []string
	for name := range h.subs[Shard] {
		if drop(name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		for s := range h.subs[Shard][name] {
			h.drop(s, Shard, name)
			n := h.count(s, Shard)
			s.Push(func(b []byte) []byte {
				b = resp.AppendPushLen(b, s.Proto(), 3)
				b = resp.AppendBulkString(b, "sunsubscribe")
				b = resp.AppendBulkString(b, name)
				return resp.AppendInt(b, int64(n))
			})
			if !h.anySubs(s) {
				s.SetSubscribed(false)
			}
		}
	}
}

// Publish delivers msg on channel to its subscribers and to those of
// every matching pattern, and returns the number of deliveries.
func (h *Hub[S]) Publish(channel string, msg []byte) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := h.deliver(h.subs[Channel][channel], "message", channel, msg)
	for pat, subs := range h.subs[Pattern] {
		if !glob.Match(pat, channel, false) {
			continue
		}
		for s := range subs {
			s.Push(func(b []byte) []byte {
				b = resp.AppendPushLen(b, s.Proto(), 4)
				b = resp.AppendBulkString(b, "pmessage")
				b = resp.AppendBulkString(b, pat)
				b = resp.AppendBulkString(b, channel)
				return resp.AppendBulk(b, msg)
			})
			n++
		}
	}
	return n
}

// PublishShard delivers msg to the subscribers of a shard channel and
// returns their number.
func (h *Hub[S]) PublishShard(channel string, msg []byte) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.deliver(h.subs[Shard][channel], "smessage", channel, msg)
}

// deliver pushes "<kind> <channel> <msg>" to subs. The lock must be held.
func (h *Hub[S]) deliver(subs map[S]struct{}, kind, channel string, msg []byte) int {
	for s := range subs {
		s.Push(func(b []byte) []byte {
			b = resp.AppendPushLen(b, s.Proto(), 3)
			b = resp.AppendBulkString(b, kind)
			b = resp.AppendBulkString(b, channel)
			return resp.AppendBulk(b, msg)
		})
	}
	return len(subs)
}

// Names returns the sorted names of kind k that have subscribers and
// match pattern (all of them when pattern is nil): PUBSUB CHANNELS and
// SHARDCHANNELS.
func (h *Hub[S]) Names(k Kind, pattern *string) []string {
	h.mu.RLock()
	var out []string
	for name := range h.subs[k] {
		if pattern == nil || glob.Match(*pattern, name, false) {
			out = append(out, name)
		}
	}
	h.mu.RUnlock()
	sort.Strings(out)
	return out
}

// NumSub returns the number of subscribers of each name of kind k
// (PUBSUB NUMSUB and SHARDNUMSUB).
func (h *Hub[S]) NumSub(k Kind, names [][]byte) []int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]int, len(names))
	for i, name := range names {
		out[i] = len(h.subs[k][string(name)])
	}
	return out
}

// Len returns the number of names of kind k with subscribers (PUBSUB
// NUMPAT, INFO's pubsub_channels and pubsub_patterns).
func (h *Hub[S]) Len(k Kind) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.subs[k])
}

// Count returns the number of names of kind k s is subscribed to (CLIENT
// LIST's sub and psub).
func (h *Hub[S]) Count(s S, k Kind) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if o := h.own[s]; o != nil {
		return len(o[k])
	}
	return 0
}

// Of returns the names of kind k s is subscribed to, in no particular
// order (ACL's check of a changed user's subscribers).
func (h *Hub[S]) Of(s S, k Kind) []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	o := h.own[s]
	if o == nil {
		return []string{}
	}
	out := make([]string, 0, len(o[k]))
	for name := range o[k] {
		out = append(out, name)
	}
	return out
}

// Help is PUBSUB HELP's text.
var Help = []string{
	"CHANNELS [<pattern>]",
	"    Return the currently active channels matching a <pattern> (default: '*').",
	"NUMPAT",
	"    Return number of subscriptions to patterns.",
	"NUMSUB [<channel> ...]",
	"    Return the number of subscribers for the specified channels, excluding",
	"    pattern subscriptions(default: no channels).",
}
