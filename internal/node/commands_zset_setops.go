package node

import (
	"github.com/shardis/shardis/internal/node/grammar"
	"github.com/shardis/shardis/internal/node/value"
)

// ZUNION, ZINTER, ZDIFF, ZINTERCARD and the STORE forms: the grammar is
// grammar.NumKeys and grammar.ParseZOpOptions, the algebra value.ZUnion,
// ZInter, ZInterCard and ZDiff.

// ZUNIONSTORE destination numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX]
func cmdZUnionStore(c *Client, args [][]byte) { zsetOpGeneric(c, args, 2, grammar.ZOpUnion, false) }

// ZINTERSTORE destination numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX]
func cmdZInterStore(c *Client, args [][]byte) { zsetOpGeneric(c, args, 2, grammar.ZOpInter, false) }

// ZDIFFSTORE destination numkeys key [key ...]
func cmdZDiffStore(c *Client, args [][]byte) { zsetOpGeneric(c, args, 2, grammar.ZOpDiff, false) }

// ZUNION numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]
func cmdZUnion(c *Client, args [][]byte) { zsetOpGeneric(c, args, 1, grammar.ZOpUnion, false) }

// ZINTER numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]
func cmdZInter(c *Client, args [][]byte) { zsetOpGeneric(c, args, 1, grammar.ZOpInter, false) }

// ZINTERCARD numkeys key [key ...] [LIMIT limit]
func cmdZInterCard(c *Client, args [][]byte) { zsetOpGeneric(c, args, 1, grammar.ZOpInter, true) }

// ZDIFF numkeys key [key ...] [WITHSCORES]
func cmdZDiff(c *Client, args [][]byte) { zsetOpGeneric(c, args, 1, grammar.ZOpDiff, false) }

// zsetOpGeneric runs a sorted-set algebra command whose numkeys is
// args[numIdx] (2: a STORE form, args[1] the destination); card is
// ZINTERCARD. As in Redis, the keys are looked up (WRONGTYPE) before the
// options are parsed.
func zsetOpGeneric(c *Client, args [][]byte, numIdx int, op grammar.ZOp, card bool) {
	n, err := grammar.NumKeys(args[numIdx], c.cmd.fullName(), len(args)-(numIdx+1))
	if err != nil {
		c.addErr(err)
		return
	}
	srcs, ok := c.loadZSources(args[numIdx+1 : numIdx+1+n])
	if !ok {
		return
	}
	store := numIdx == 2
	o, err := grammar.ParseZOpOptions(args[numIdx+1+n:], srcs, op, store, card)
	if err != nil {
		c.addErr(err)
		return
	}
	if card {
		c.addInt(value.ZInterCard(srcs, o.Limit))
		return
	}
	var res *value.ZSet
	switch op {
	case grammar.ZOpUnion:
		res = value.ZUnion(srcs, o.Aggregate)
	case grammar.ZOpInter:
		res = value.ZInter(srcs, o.Aggregate)
	default:
		res = value.ZDiff(srcs)
	}
	if store {
		res.ShrinkIfSmall(c.zsetLimits())
		event := [...]string{"zunionstore", "zinterstore", "zdiffstore"}[op]
		c.storeZSet(string(args[1]), res, event)
		return
	}
	c.replyZItems(res.Items(), o.WithScores)
}

// loadZSources looks up the inputs of a sorted-set algebra command: each
// a sorted set, a set or missing, weighted 1; ok=false after replying
// WRONGTYPE for another type.
func (c *Client) loadZSources(keys [][]byte) ([]value.ZSource, bool) {
	db := c.curDB()
	srcs := make([]value.ZSource, len(keys))
	for i, k := range keys {
		srcs[i].Weight = 1
		e := db.Lookup(string(k), c.now)
		if e == nil {
			continue
		}
		switch v := e.Obj.(type) {
		case *value.ZSet:
			srcs[i].ZSet = v
		case *value.Set:
			srcs[i].Set = v
		default:
			c.addError(errWrongType)
			return nil, false
		}
	}
	return srcs, true
}
