package node

import (
	"math/rand/v2"

	"github.com/shardis/shardis/internal/node/lolwut"
)

func registerLolwutCommands(t *commandTable) {
	t.add(&command{name: "lolwut", arity: -1, flags: flagReadOnly | flagFast, fn: cmdLolwut, group: "server", since: "5.0.0"})
}

// LOLWUT [VERSION version] [args ...]: as Redis 7.0, the art of version 5
// (Schotter) or 6 (a skyline) when asked for, and for this version just
// the version line (package lolwut).
func cmdLolwut(c *Client, args [][]byte) {
	r, err := lolwut.Parse(args[1:], Version)
	if err != nil {
		c.addError(err.Error())
		return
	}
	c.addVerbatim(r.Render(rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))))
}
