package node

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shardis/shardis/internal/node/geo"
	"github.com/shardis/shardis/internal/node/value"
)

// Geo commands (Redis's geo.c): positions stored in sorted sets as 52-bit
// geohash scores (internal/node/geo). GEOADD is ZADD with computed scores;
// the searches visit the centre's cell and its neighbours.

func registerGeoCommands(t *commandTable) {
	add := func(name string, arity int, flags cmdFlag, first, last int, fn handlerFunc, since string) {
		t.add(&command{name: name, arity: arity, flags: flags, first: first, last: last, step: 1, fn: fn, group: "geo", since: since})
	}
	add("geoadd", -5, flagWrite|flagDenyOOM, 1, 1, cmdGeoAdd, "3.2.0")
	add("geodist", -4, flagReadOnly, 1, 1, cmdGeoDist, "3.2.0")
	add("geohash", -2, flagReadOnly, 1, 1, cmdGeoHash, "3.2.0")
	add("geopos", -2, flagReadOnly, 1, 1, cmdGeoPos, "3.2.0")
	add("georadius", -6, flagWrite|flagDenyOOM, 1, 1, cmdGeoRadius, "3.2.0")
	add("georadius_ro", -6, flagReadOnly, 1, 1, cmdGeoRadiusRO, "3.2.10")
	add("georadiusbymember", -5, flagWrite|flagDenyOOM, 1, 1, cmdGeoRadiusByMember, "3.2.0")
	add("georadiusbymember_ro", -5, flagReadOnly, 1, 1, cmdGeoRadiusByMemberRO, "3.2.10")
	add("geosearch", -7, flagReadOnly, 1, 1, cmdGeoSearch, "6.2.0")
	add("geosearchstore", -8, flagWrite|flagDenyOOM, 1, 2, cmdGeoSearchStore, "6.2.0")
	// GEORADIUS and GEORADIUSBYMEMBER write only with STORE/STOREDIST: their
	// keys are the source and, when given, the STORE key.
	for _, n := range []string{"georadius", "georadiusbymember"} {
		cmd := t.lookup([]byte(n))
		cmd.keys = geoRadiusKeys
	}
}

// geoRadiusKeys returns the source key and a STORE/STOREDIST key.
func geoRadiusKeys(args [][]byte) []int {
	pos := []int{1}
	for i := 5; i+1 < len(args); i++ {
		if eqFold(args[i], "store") || eqFold(args[i], "storedist") {
			pos = append(pos, i+1)
			i++
		}
	}
	return pos
}

// geoLongLat parses a longitude, latitude pair with Redis's checks.
func (c *Client) geoLongLat(lon, lat []byte) (float64, float64, bool) {
	x, ok1 := parseFloat(lon)
	y, ok2 := parseFloat(lat)
	if !ok1 || !ok2 {
		c.addError(errNotFloat)
		return 0, 0, false
	}
	if x < geo.LongMin || x > geo.LongMax || y < geo.LatMin || y > geo.LatMax {
		c.addError(fmt.Sprintf("ERR invalid longitude,latitude pair %f,%f", x, y))
		return 0, 0, false
	}
	return x, y, true
}

// geoUnit parses a unit argument.
func (c *Client) geoUnit(u []byte) (float64, bool) {
	m, ok := geo.Unit(string(u))
	if !ok {
		c.addError("ERR unsupported unit provided. please use M, KM, FT, MI")
	}
	return m, ok
}

// geoDistance parses "radius unit".
func (c *Client) geoDistance(args [][]byte) (radius, conv float64, ok bool) {
	r, ok := parseFloat(args[0])
	if !ok {
		c.addError("ERR need numeric radius")
		return 0, 0, false
	}
	if r < 0 {
		c.addError("ERR radius cannot be negative")
		return 0, 0, false
	}
	conv, ok = c.geoUnit(args[1])
	return r, conv, ok
}

// GEOADD key [NX|XX] [CH] longitude latitude member [...]
func cmdGeoAdd(c *Client, args [][]byte) {
	xx, nx := false, false
	idx := 2
	for ; idx < len(args); idx++ {
		switch {
		case eqFold(args[idx], "nx"):
			nx = true
		case eqFold(args[idx], "xx"):
			xx = true
		case eqFold(args[idx], "ch"):
		default:
			goto done
		}
	}
done:
	if (len(args)-idx)%3 != 0 || (xx && nx) {
		c.addError(errSyntax)
		return
	}
	// ZADD key [NX|XX] [CH] score member ...
	zargs := make([][]byte, 0, idx+(len(args)-idx)/3*2)
	zargs = append(zargs, []byte("zadd"))
	zargs = append(zargs, args[1:idx]...)
	for i := idx; i < len(args); i += 3 {
		x, y, ok := c.geoLongLat(args[i], args[i+1])
		if !ok {
			return
		}
		h, _ := geo.Encode(x, y, geo.StepMax)
		zargs = append(zargs, strconv.AppendUint(nil, geo.Align52(h), 10), args[i+2])
	}
	zaddGeneric(c, zargs, false)
	if c.dirty > 0 && c.propArgs == nil {
		c.propagateAs(zargs) // replicas and the AOF receive the ZADD, as from Redis
	}
}

// GEODIST key member1 member2 [unit]
func cmdGeoDist(c *Client, args [][]byte) {
	conv := 1.0
	if len(args) == 5 {
		var ok bool
		if conv, ok = c.geoUnit(args[4]); !ok {
			return
		}
	} else if len(args) > 5 {
		c.addError(errSyntax)
		return
	}
	z, _, ok := c.lookupZSet(string(args[1]))
	if !ok {
		return
	}
	if z == nil {
		c.addNull()
		return
	}
	s1, ok1 := z.Score(string(args[2]))
	s2, ok2 := z.Score(string(args[3]))
	if !ok1 || !ok2 {
		c.addNull()
		return
	}
	x1, y1, ok1 := geo.FromScore(s1)
	x2, y2, ok2 := geo.FromScore(s2)
	if !ok1 || !ok2 {
		c.addNull()
		return
	}
	c.addBulkString(geo.FormatDistance(geo.Distance(x1, y1, x2, y2) / conv))
}

// GEOHASH key [member ...]
func cmdGeoHash(c *Client, args [][]byte) {
	eachMemberScore(c, args, func(score float64, found bool) {
		var h string
		if found {
			h, found = geo.String11(score)
		}
		if found {
			c.addBulkString(h)
		} else {
			c.addNull()
		}
	})
}

// GEOPOS key [member ...]
func cmdGeoPos(c *Client, args [][]byte) {
	eachMemberScore(c, args, func(score float64, found bool) {
		var x, y float64
		if found {
			x, y, found = geo.FromScore(score)
		}
		if !found {
			c.addNullArray()
			return
		}
		c.addArrayLen(2)
		c.addHumanDouble(x)
		c.addHumanDouble(y)
	})
}

// addHumanDouble is Redis's addReplyHumanLongDouble for a double: 17
// decimals with trailing zeros trimmed, a bulk string in RESP2 and a double
// in RESP3.
func (c *Client) addHumanDouble(f float64) {
	s := strconv.FormatFloat(f, 'f', 17, 64)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	if c.proto > 2 {
		if c.replying() {
			c.out = append(append(append(c.out, ','), s...), "\r\n"...)
		}
		return
	}
	c.addBulkString(s)
}

// Flags of geoSearch's variants, as Redis's georadiusGeneric takes them.
const (
	geoRadiusCoords = 1 << iota
	geoRadiusMember
	geoNoStore
	geoSearch
	geoSearchStore
)

func cmdGeoRadius(c *Client, args [][]byte) { geoSearchGeneric(c, args, 1, geoRadiusCoords) }
func cmdGeoRadiusRO(c *Client, args [][]byte) {
	geoSearchGeneric(c, args, 1, geoRadiusCoords|geoNoStore)
}
func cmdGeoRadiusByMember(c *Client, args [][]byte) {
	geoSearchGeneric(c, args, 1, geoRadiusMember)
}
func cmdGeoRadiusByMemberRO(c *Client, args [][]byte) {
	geoSearchGeneric(c, args, 1, geoRadiusMember|geoNoStore)
}
func cmdGeoSearch(c *Client, args [][]byte) { geoSearchGeneric(c, args, 1, geoSearch) }
func cmdGeoSearchStore(c *Client, args [][]byte) {
	geoSearchGeneric(c, args, 2, geoSearch|geoSearchStore)
}

// geoPoint is one search result.
type geoPoint struct {
	long, lat, dist, score float64
	member                 string
}

// geoMemberPos decodes a member's position.
func geoMemberPos(z *value.ZSet, m []byte) (float64, float64, bool) {
	score, ok := z.Score(string(m))
	if !ok {
		return 0, 0, false
	}
	return geo.FromScore(score)
}

// geoSearchGeneric is Redis's georadiusGeneric: every GEORADIUS* and
// GEOSEARCH* variant, with its argument rules and error texts.
func geoSearchGeneric(c *Client, args [][]byte, srcIdx int, flags int) {
	z, _, ok := c.lookupZSet(string(args[srcIdx]))
	if !ok {
		return
	}
	var storeKey []byte
	storeDist := false
	var shape geo.Shape
	var base int
	switch {
	case flags&geoRadiusCoords != 0:
		base = 6
		if shape.Long, shape.Lat, ok = c.geoLongLat(args[2], args[3]); !ok {
			return
		}
		if shape.Radius, shape.Conversion, ok = c.geoDistance(args[base-2:]); !ok {
			return
		}
	case flags&geoRadiusMember != 0 && z == nil:
		base = 5
	case flags&geoRadiusMember != 0:
		base = 5
		if shape.Long, shape.Lat, ok = geoMemberPos(z, args[2]); !ok {
			c.addError("ERR could not decode requested zset member")
			return
		}
		if shape.Radius, shape.Conversion, ok = c.geoDistance(args[base-2:]); !ok {
			return
		}
	default: // GEOSEARCH
		base = 2
		if flags&geoSearchStore != 0 {
			base = 3
			storeKey = args[1]
		}
	}
	withDist, withHash, withCoords, any := false, false, false, false
	fromMember, fromLoc, byRadius, byBox := false, false, false, false
	sortOrder := 0 // 1 ascending, 2 descending
	var count int64
	rest := args[base:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		more := len(rest) - i - 1
		switch {
		case eqFold(a, "withdist"):
			withDist = true
		case eqFold(a, "withhash"):
			withHash = true
		case eqFold(a, "withcoord"):
			withCoords = true
		case eqFold(a, "any"):
			any = true
		case eqFold(a, "asc"):
			sortOrder = 1
		case eqFold(a, "desc"):
			sortOrder = 2
		case eqFold(a, "count") && more >= 1:
			n, ok := parseInt(rest[i+1])
			if !ok {
				c.addError(errNotInt)
				return
			}
			if n <= 0 {
				c.addError("ERR COUNT must be > 0")
				return
			}
			count = n
			i++
		case (eqFold(a, "store") || eqFold(a, "storedist")) && more >= 1 && flags&(geoNoStore|geoSearch) == 0:
			storeKey = rest[i+1]
			storeDist = eqFold(a, "storedist")
			i++
		case eqFold(a, "storedist") && flags&geoSearch != 0 && flags&geoSearchStore != 0:
			storeDist = true
		case eqFold(a, "frommember") && more >= 1 && flags&geoSearch != 0 && !fromLoc:
			if z != nil {
				if shape.Long, shape.Lat, ok = geoMemberPos(z, rest[i+1]); !ok {
					c.addError("ERR could not decode requested zset member")
					return
				}
			}
			fromMember = true
			i++
		case eqFold(a, "fromlonlat") && more >= 2 && flags&geoSearch != 0 && !fromMember:
			if shape.Long, shape.Lat, ok = c.geoLongLat(rest[i+1], rest[i+2]); !ok {
				return
			}
			fromLoc = true
			i += 2
		case eqFold(a, "byradius") && more >= 2 && flags&geoSearch != 0 && !byBox:
			if shape.Radius, shape.Conversion, ok = c.geoDistance(rest[i+1:]); !ok {
				return
			}
			shape.Box = false
			byRadius = true
			i += 2
		case eqFold(a, "bybox") && more >= 3 && flags&geoSearch != 0 && !byRadius:
			w, ok1 := parseFloat(rest[i+1])
			if !ok1 {
				c.addError("ERR need numeric width")
				return
			}
			h, ok2 := parseFloat(rest[i+2])
			if !ok2 {
				c.addError("ERR need numeric height")
				return
			}
			if h < 0 || w < 0 {
				c.addError("ERR height or width cannot be negative")
				return
			}
			conv, ok := c.geoUnit(rest[i+3])
			if !ok {
				return
			}
			shape.Width, shape.Height, shape.Conversion, shape.Box = w, h, conv, true
			byBox = true
			i += 3
		default:
			c.addError(errSyntax)
			return
		}
	}
	if storeKey != nil && (withDist || withHash || withCoords) {
		what := "STORE option in GEORADIUS"
		if flags&geoSearchStore != 0 {
			what = "GEOSEARCHSTORE"
		}
		c.addError("ERR " + what + " is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
		return
	}
	if flags&geoSearch != 0 && !(fromMember || fromLoc) {
		c.addError("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + string(args[0]))
		return
	}
	if flags&geoSearch != 0 && !(byRadius || byBox) {
		c.addError("ERR exactly one of BYRADIUS and BYBOX can be specified for " + string(args[0]))
		return
	}
	if any && count == 0 {
		c.addError("ERR the ANY argument requires COUNT argument")
		return
	}
	if z == nil {
		if storeKey != nil {
			db := c.curDB()
			dst := string(storeKey)
			if db.Lookup(dst, c.now) != nil {
				db.Remove(dst)
				c.signalModifiedKey(dst)
				c.notify(notifyGeneric, "del", dst)
				c.markDirty(1)
			}
			c.addInt(0)
		} else {
			c.addArrayLen(0)
		}
		return
	}
	if count != 0 && sortOrder == 0 && !any {
		sortOrder = 1
	}
	limit := int64(0)
	if any {
		limit = count
	}
	points := geoCollect(z, &shape, limit)
	if len(points) == 0 && storeKey == nil {
		c.addArrayLen(0)
		return
	}
	switch sortOrder {
	case 1:
		slices.SortStableFunc(points, func(a, b geoPoint) int { return cmpFloat(a.dist, b.dist) })
	case 2:
		slices.SortStableFunc(points, func(a, b geoPoint) int { return cmpFloat(b.dist, a.dist) })
	}
	n := len(points)
	if count != 0 && int64(n) > count {
		n = int(count)
	}
	points = points[:n]
	for i := range points {
		points[i].dist /= shape.Conversion
	}
	if storeKey == nil {
		opts := 0
		for _, w := range []bool{withDist, withCoords, withHash} {
			if w {
				opts++
			}
		}
		c.addArrayLen(n)
		for _, p := range points {
			if opts > 0 {
				c.addArrayLen(opts + 1)
			}
			c.addBulkString(p.member)
			if withDist {
				c.addBulkString(geo.FormatDistance(p.dist))
			}
			if withHash {
				c.addInt(int64(p.score))
			}
			if withCoords {
				c.addArrayLen(2)
				c.addHumanDouble(p.long)
				c.addHumanDouble(p.lat)
			}
		}
		return
	}
	res := value.NewZSet()
	lim := c.zsetLimits()
	for _, p := range points {
		score := p.score
		if storeDist {
			score = p.dist
		}
		res.Set(p.member, score, lim)
	}
	event := "georadiusstore"
	if flags&geoSearch != 0 {
		event = "geosearchstore"
	}
	c.storeZSet(string(storeKey), res, event)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// geoCollect gathers the members of z inside shape, cell by cell in
// Redis's order and by score within a cell; limit > 0 (ANY) stops once
// that many are found.
func geoCollect(z *value.ZSet, shape *geo.Shape, limit int64) []geoPoint {
	var out []geoPoint
	for _, cell := range shape.Cells() {
		if limit > 0 && int64(len(out)) >= limit {
			break
		}
		min, max := geo.ScoreRange(cell)
		lo, hi := zScoreRange{min: min, max: max, maxex: true}.bounds(z)
		if lo >= hi {
			continue
		}
		z.RangeByRank(lo, hi-1, false, func(m string, s float64) bool {
			if x, y, d, in := shape.Within(s); in {
				out = append(out, geoPoint{long: x, lat: y, dist: d, score: s, member: m})
			}
			return !(limit > 0 && int64(len(out)) >= limit)
		})
	}
	return out
}
