package node

import (
	"math"
	"sort"

	"github.com/shardis/shardis/internal/node/value"
)

// ---- ZUNION / ZINTER / ZDIFF -------------------------------------------------

// zsetOpSrc is one input of ZUNION/ZINTER/ZDIFF: a sorted set or a set
// (whose members score 1).
type zsetOpSrc struct {
	z      *value.ZSet
	set    zSetSource
	weight float64
}

// zSetSource is what the set operations need from a set value.
type zSetSource interface {
	Len() int
	Has(member string) bool
	ForEach(fn func(member string) bool)
}

func (s *zsetOpSrc) length() int {
	switch {
	case s.z != nil:
		return s.z.Len()
	case s.set != nil:
		return s.set.Len()
	}
	return 0
}

func (s *zsetOpSrc) forEach(fn func(m string, score float64) bool) {
	switch {
	case s.z != nil:
		s.z.ForEach(fn)
	case s.set != nil:
		s.set.ForEach(func(m string) bool { return fn(m, 1) })
	}
}

func (s *zsetOpSrc) find(m string) (float64, bool) {
	switch {
	case s.z != nil:
		return s.z.Score(m)
	case s.set != nil:
		if s.set.Has(m) {
			return 1, true
		}
	}
	return 0, false
}

type zsetOp int

const (
	zopUnion zsetOp = iota
	zopInter
	zopDiff
)

const (
	zaggrSum = iota
	zaggrMin
	zaggrMax
)

func zaggregate(target *float64, v float64, aggr int) {
	switch aggr {
	case zaggrSum:
		*target += v
		if math.IsNaN(*target) {
			*target = 0
		}
	case zaggrMin:
		if v < *target {
			*target = v
		}
	case zaggrMax:
		if v > *target {
			*target = v
		}
	}
}

// ZUNIONSTORE destination numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX]
func cmdZUnionStore(c *Client, args [][]byte) { zsetOpGeneric(c, args, 2, zopUnion, false) }

// ZINTERSTORE destination numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX]
func cmdZInterStore(c *Client, args [][]byte) { zsetOpGeneric(c, args, 2, zopInter, false) }

// ZDIFFSTORE destination numkeys key [key ...]
func cmdZDiffStore(c *Client, args [][]byte) { zsetOpGeneric(c, args, 2, zopDiff, false) }

// ZUNION numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]
func cmdZUnion(c *Client, args [][]byte) { zsetOpGeneric(c, args, 1, zopUnion, false) }

// ZINTER numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]
func cmdZInter(c *Client, args [][]byte) { zsetOpGeneric(c, args, 1, zopInter, false) }

// ZINTERCARD numkeys key [key ...] [LIMIT limit]
func cmdZInterCard(c *Client, args [][]byte) { zsetOpGeneric(c, args, 1, zopInter, true) }

// ZDIFF numkeys key [key ...] [WITHSCORES]
func cmdZDiff(c *Client, args [][]byte) { zsetOpGeneric(c, args, 1, zopDiff, false) }

func zsetOpGeneric(c *Client, args [][]byte, numIdx int, op zsetOp, cardOnly bool) {
	setnum, ok := parseInt(args[numIdx])
	if !ok {
		c.addError(errNotInt)
		return
	}
	if setnum < 1 {
		c.addError("ERR at least 1 input key is needed for '" + c.cmd.fullName() + "' command")
		return
	}
	if setnum > int64(len(args)-(numIdx+1)) {
		c.addError(errSyntax)
		return
	}
	dst := ""
	if numIdx == 2 {
		dst = string(args[1])
	}
	db := c.curDB()
	src := make([]zsetOpSrc, setnum)
	j := numIdx + 1
	for i := range src {
		src[i].weight = 1
		e := db.Lookup(string(args[j]), c.now)
		j++
		if e == nil {
			continue
		}
		switch v := e.Obj.(type) {
		case *value.ZSet:
			src[i].z = v
		default:
			tv, isTV := e.Obj.(value.Value)
			ss, isSet := e.Obj.(zSetSource)
			if !isTV || tv.TypeName() != "set" || !isSet {
				c.addError(errWrongType)
				return
			}
			src[i].set = ss
		}
	}
	aggr := zaggrSum
	withScores := false
	var limit int64
	for j < len(args) {
		remaining := len(args) - j
		a := args[j]
		switch {
		case op != zopDiff && !cardOnly && remaining >= int(setnum)+1 && eqFold(a, "weights"):
			j++
			for i := range src {
				f, ok := parseFloat(args[j])
				if !ok {
					c.addError(errZWeightFloat)
					return
				}
				src[i].weight = f
				j++
			}
		case op != zopDiff && !cardOnly && remaining >= 2 && eqFold(a, "aggregate"):
			j++
			switch {
			case eqFold(args[j], "sum"):
				aggr = zaggrSum
			case eqFold(args[j], "min"):
				aggr = zaggrMin
			case eqFold(args[j], "max"):
				aggr = zaggrMax
			default:
				c.addError(errSyntax)
				return
			}
			j++
		case dst == "" && !cardOnly && eqFold(a, "withscores"):
			j++
			withScores = true
		case cardOnly && remaining >= 2 && eqFold(a, "limit"):
			n, ok := parseInt(args[j+1])
			if !ok || n < 0 {
				c.addError("ERR LIMIT can't be negative")
				return
			}
			limit = n
			j += 2
		default:
			c.addError(errSyntax)
			return
		}
	}
	if op != zopDiff {
		sort.SliceStable(src, func(a, b int) bool { return src[a].length() < src[b].length() })
	}
	res := value.NewZSetLarge()
	cardinality := int64(0)
	switch op {
	case zopInter:
		if src[0].length() == 0 {
			break
		}
		src[0].forEach(func(m string, s float64) bool {
			score := src[0].weight * s
			if math.IsNaN(score) {
				score = 0
			}
			k := 1
			for ; k < len(src); k++ {
				v, ok := src[k].find(m)
				if !ok {
					break
				}
				zaggregate(&score, v*src[k].weight, aggr)
			}
			if k < len(src) {
				return true
			}
			if cardOnly {
				cardinality++
				return limit == 0 || cardinality < limit
			}
			res.InsertNew(m, score)
			return true
		})
	case zopUnion:
		acc := make(map[string]float64, src[len(src)-1].length())
		for i := range src {
			src[i].forEach(func(m string, s float64) bool {
				score := src[i].weight * s
				if math.IsNaN(score) {
					score = 0
				}
				if cur, ok := acc[m]; ok {
					zaggregate(&cur, score, aggr)
					acc[m] = cur
				} else {
					acc[m] = score
				}
				return true
			})
		}
		for m, s := range acc {
			res.InsertNew(m, s)
		}
	case zopDiff:
		src[0].forEach(func(m string, s float64) bool {
			for k := 1; k < len(src); k++ {
				if _, ok := src[k].find(m); ok {
					return true
				}
			}
			res.InsertNew(m, s)
			return true
		})
	}
	switch {
	case dst != "":
		res.ShrinkIfSmall(c.zsetLimits())
		event := [...]string{"zunionstore", "zinterstore", "zdiffstore"}[op]
		c.storeZSet(dst, res, event)
	case cardOnly:
		c.addInt(cardinality)
	default:
		items := make([]value.ZItem, 0, res.Len())
		res.ForEach(func(m string, s float64) bool {
			items = append(items, value.ZItem{Member: m, Score: s})
			return true
		})
		c.replyZItems(items, withScores)
	}
}
