package node

import (
	"sort"
	"sync"

	"github.com/shardis/shardis/internal/resp"
)

// pubsubHub holds channel and pattern subscriptions. Publishing appends the
// message to each subscriber's pending output under the hub's lock, so
// messages reach every subscriber in publish order.
type pubsubHub struct {
	mu       sync.RWMutex
	channels map[string]map[*Client]struct{}
	patterns map[string]map[*Client]struct{}
	// shards holds the SSUBSCRIBE subscriptions (sharded pub/sub).
	shards map[string]map[*Client]struct{}
}

func newPubsubHub() *pubsubHub {
	return &pubsubHub{
		channels: make(map[string]map[*Client]struct{}),
		patterns: make(map[string]map[*Client]struct{}),
		shards:   make(map[string]map[*Client]struct{}),
	}
}

// subCount is the number of channels plus patterns c is subscribed to.
// The hub lock must be held.
func (c *Client) subCount() int { return len(c.channels) + len(c.patterns) }

// anySubs reports whether c has any subscription, sharded ones included
// (the pub/sub context of RESP2). The hub lock must be held.
func (c *Client) anySubs() bool { return c.subCount()+len(c.shardChannels) > 0 }

// subscribe adds c to channel (or pattern) and queues the confirmation in
// order with messages.
func (h *pubsubHub) subscribe(c *Client, name string, pattern bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m, own := h.channels, &c.channels
	kind := "subscribe"
	if pattern {
		m, own, kind = h.patterns, &c.patterns, "psubscribe"
	}
	if *own == nil {
		*own = make(map[string]struct{})
	}
	if _, ok := (*own)[name]; !ok {
		(*own)[name] = struct{}{}
		subs := m[name]
		if subs == nil {
			subs = make(map[*Client]struct{})
			m[name] = subs
		}
		subs[c] = struct{}{}
	}
	c.setFlag(clientPubSub, true)
	n := c.subCount()
	c.emitOrdered(func(b []byte) []byte {
		b = resp.AppendPushLen(b, c.proto, 3)
		b = resp.AppendBulkString(b, kind)
		b = resp.AppendBulkString(b, name)
		return resp.AppendInt(b, int64(n))
	})
}

// unsubscribe removes c from the given channels (all when names is empty).
func (h *pubsubHub) unsubscribe(c *Client, names []string, pattern bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m, own := h.channels, c.channels
	kind := "unsubscribe"
	if pattern {
		m, own, kind = h.patterns, c.patterns, "punsubscribe"
	}
	if len(names) == 0 {
		for n := range own {
			names = append(names, n)
		}
		sort.Strings(names)
		if len(names) == 0 {
			n := c.subCount()
			c.emitOrdered(func(b []byte) []byte {
				b = resp.AppendPushLen(b, c.proto, 3)
				b = resp.AppendBulkString(b, kind)
				b = resp.AppendNull(b, c.proto)
				return resp.AppendInt(b, int64(n))
			})
			return
		}
	}
	for _, name := range names {
		if _, ok := own[name]; ok {
			delete(own, name)
			if subs := m[name]; subs != nil {
				delete(subs, c)
				if len(subs) == 0 {
					delete(m, name)
				}
			}
		}
		n := c.subCount()
		c.emitOrdered(func(b []byte) []byte {
			b = resp.AppendPushLen(b, c.proto, 3)
			b = resp.AppendBulkString(b, kind)
			b = resp.AppendBulkString(b, name)
			return resp.AppendInt(b, int64(n))
		})
	}
	if !c.anySubs() {
		c.setFlag(clientPubSub, false)
	}
}

// unsubscribeAll drops every subscription of a closing client, silently.
func (h *pubsubHub) unsubscribeAll(c *Client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name := range c.channels {
		if subs := h.channels[name]; subs != nil {
			delete(subs, c)
			if len(subs) == 0 {
				delete(h.channels, name)
			}
		}
	}
	for name := range c.patterns {
		if subs := h.patterns[name]; subs != nil {
			delete(subs, c)
			if len(subs) == 0 {
				delete(h.patterns, name)
			}
		}
	}
	for name := range c.shardChannels {
		if subs := h.shards[name]; subs != nil {
			delete(subs, c)
			if len(subs) == 0 {
				delete(h.shards, name)
			}
		}
	}
	c.channels, c.patterns, c.shardChannels = nil, nil, nil
	c.setFlag(clientPubSub, false)
}

// publish delivers msg and returns the number of receivers.
func (h *pubsubHub) publish(channel string, msg []byte) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for c := range h.channels[channel] {
		c.push(func(b []byte) []byte {
			b = resp.AppendPushLen(b, c.proto, 3)
			b = resp.AppendBulkString(b, "message")
			b = resp.AppendBulkString(b, channel)
			return resp.AppendBulk(b, msg)
		})
		n++
	}
	for pat, subs := range h.patterns {
		if !globMatch(pat, channel, false) {
			continue
		}
		for c := range subs {
			c.push(func(b []byte) []byte {
				b = resp.AppendPushLen(b, c.proto, 4)
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

// emitOrdered appends the client's pending replies and then fn's output to
// the pushed stream, so a reply produced under the hub's lock cannot be
// overtaken by a message published after it.
func (c *Client) emitOrdered(fn func(b []byte) []byte) {
	// (P)SUBSCRIBE confirmations are pushed even under CLIENT REPLY
	// OFF|SKIP, as Redis 7.0 does (CLIENT_PUSHING).
	out := c.out
	c.out = nil
	c.push(func(b []byte) []byte {
		b = append(b, out...)
		return fn(b)
	})
}

// Publish sends msg on channel from inside the server (keyspace
// notifications, Sentinel-style hello messages).
func (s *Server) Publish(channel string, msg []byte) int {
	return s.pubsub.publish(channel, msg)
}

// globMatch is Redis's stringmatchlen: * ? [abc] [^a-z] \x, optionally
// case-insensitive.
func globMatch(pattern, str string, nocase bool) bool {
	var skipLonger bool
	return globMatchDepth(pattern, str, nocase, 0, &skipLonger)
}

func lower(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// skipLonger is Redis's skipLongerMatches: once the rest of a pattern after
// a '*' matched nowhere in the string, earlier stars need not try longer
// matches (keeps "a*a*a*...b" linear instead of exponential).
func globMatchDepth(p, s string, nocase bool, depth int, skipLonger *bool) bool {
	if depth > 1000 {
		return false
	}
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if globMatchDepth(p[1:], s[i:], nocase, depth+1, skipLonger) {
					return true
				}
				if *skipLonger {
					return false
				}
			}
			*skipLonger = true
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			s = s[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			p = p[1:]
			not := len(p) > 0 && p[0] == '^'
			if not {
				p = p[1:]
			}
			match := false
			for {
				if len(p) == 0 {
					break
				}
				if p[0] == '\\' && len(p) >= 2 {
					p = p[1:]
					if p[0] == s[0] {
						match = true
					}
				} else if p[0] == ']' {
					break
				} else if len(p) >= 3 && p[1] == '-' {
					start, end := p[0], p[2]
					if start > end {
						start, end = end, start
					}
					c := s[0]
					if nocase {
						start, end, c = lower(start), lower(end), lower(c)
					}
					p = p[2:]
					if c >= start && c <= end {
						match = true
					}
				} else {
					if nocase {
						if lower(p[0]) == lower(s[0]) {
							match = true
						}
					} else if p[0] == s[0] {
						match = true
					}
				}
				p = p[1:]
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s = s[1:]
			if len(p) == 0 {
				// Unterminated class: Redis treats the end as closing it.
				return len(s) == 0
			}
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if len(s) == 0 {
				return false
			}
			if nocase {
				if lower(p[0]) != lower(s[0]) {
					return false
				}
			} else if p[0] != s[0] {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
		if len(s) == 0 {
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			break
		}
	}
	return len(p) == 0 && len(s) == 0
}
