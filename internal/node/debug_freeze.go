package node

import (
	"time"

	"github.com/shardis/shardis/internal/node/clients"
)

// freezeGate stops the whole server during DEBUG SLEEP (clients.Freeze):
// no other client's command runs (the replication link's included), the
// replica link does not reconnect and the replication cron skips its
// work. Commands wait in enterWrite, before any lock; the sleeper also
// holds every shard lock, so commands already past the gate finish first
// or wait too.
type freezeGate = clients.Freeze

// freeze stops the server for d on behalf of c.
func (s *Server) freeze(c *Client, d time.Duration) { s.pause.freeze.Hold(c, d) }

// frozen reports whether a DEBUG SLEEP stops the server.
func (s *Server) frozen() bool { return s.pause.freeze.On() }

// waitUnfrozen waits while a DEBUG SLEEP of another client stops the
// server; c may be nil (the server's own goroutines). It returns early if
// c goes away.
func (s *Server) waitUnfrozen(c *Client) {
	if c == nil {
		s.pause.freeze.Wait(nil, nil)
		return
	}
	s.pause.freeze.Wait(c, c.done)
}
