package node

import (
	"github.com/shardis/shardis/internal/node/glob"
	"github.com/shardis/shardis/internal/node/pubsub"
)

// pubsubHub is the server's subscription registry (package pubsub), with
// the node's clients as subscribers.
type pubsubHub struct {
	*pubsub.Hub[subscriber]
}

func newPubsubHub() *pubsubHub { return &pubsubHub{pubsub.New[subscriber]()} }

// subscriber is a client as the hub sees it.
type subscriber struct{ c *Client }

// Proto is the client's RESP version.
func (s subscriber) Proto() int { return s.c.proto }

// Push appends a message to the client's pushed output.
func (s subscriber) Push(fn func(b []byte) []byte) { s.c.push(fn) }

// Confirm appends the client's pending replies and then fn's output to
// the pushed stream, so a reply produced under the hub's lock cannot be
// overtaken by a message published after it. (P|S)SUBSCRIBE confirmations
// are pushed even under CLIENT REPLY OFF|SKIP, as Redis 7.0 does
// (CLIENT_PUSHING).
func (s subscriber) Confirm(fn func(b []byte) []byte) {
	c := s.c
	out := c.out
	c.out = nil
	c.push(func(b []byte) []byte {
		b = append(b, out...)
		return fn(b)
	})
}

// SetSubscribed sets the client's pub/sub context flag.
func (s subscriber) SetSubscribed(on bool) { s.c.setFlag(clientPubSub, on) }

// unsubscribeAll drops every subscription of a closing client, silently.
func (h *pubsubHub) unsubscribeAll(c *Client) { h.UnsubscribeAll(subscriber{c}) }

// publish delivers msg and returns the number of receivers.
func (h *pubsubHub) publish(channel string, msg []byte) int { return h.Publish(channel, msg) }

// Publish sends msg on channel from inside the server (keyspace
// notifications, Sentinel-style hello messages).
func (s *Server) Publish(channel string, msg []byte) int {
	return s.pubsub.publish(channel, msg)
}

// globMatch is Redis's stringmatchlen (package glob).
func globMatch(pattern, str string, nocase bool) bool { return glob.Match(pattern, str, nocase) }
