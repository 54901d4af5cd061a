package node

import (
	"github.com/shardis/shardis/internal/node/geo"
)

// Geo commands (Redis's geo.c): positions stored in sorted sets as 52-bit
// geohash scores. The geohash arithmetic, the grammars and the search are
// internal/node/geo; GEOADD is ZADD with computed scores.

func registerGeoCommands(t *commandTable) {
	add := func(name string, arity int, flags cmdFlag, first, last int, fn handlerFunc, since string) {
		t.add(&command{name: name, arity: arity, flags: flags, first: first, last: last, step: 1, fn: fn, group: "geo", since: since})
	}
	search := func(v geo.Variant) handlerFunc {
		src := 1
		if v&geo.SearchStore != 0 {
			src = 2
		}
		return func(c *Client, args [][]byte) { geoSearchGeneric(c, args, src, v) }
	}
	add("geoadd", -5, flagWrite|flagDenyOOM, 1, 1, cmdGeoAdd, "3.2.0")
	add("geodist", -4, flagReadOnly, 1, 1, cmdGeoDist, "3.2.0")
	add("geohash", -2, flagReadOnly, 1, 1, cmdGeoHash, "3.2.0")
	add("geopos", -2, flagReadOnly, 1, 1, cmdGeoPos, "3.2.0")
	add("georadius", -6, flagWrite|flagDenyOOM, 1, 1, search(geo.RadiusCoords), "3.2.0")
	add("georadius_ro", -6, flagReadOnly, 1, 1, search(geo.RadiusCoords|geo.NoStore), "3.2.10")
	add("georadiusbymember", -5, flagWrite|flagDenyOOM, 1, 1, search(geo.RadiusMember), "3.2.0")
	add("georadiusbymember_ro", -5, flagReadOnly, 1, 1, search(geo.RadiusMember|geo.NoStore), "3.2.10")
	add("geosearch", -7, flagReadOnly, 1, 1, search(geo.Search), "6.2.0")
	add("geosearchstore", -8, flagWrite|flagDenyOOM, 1, 2, search(geo.Search|geo.SearchStore), "6.2.0")
	// GEORADIUS and GEORADIUSBYMEMBER write only with STORE/STOREDIST: their
	// keys are the source and, when given, the STORE key.
	for _, n := range []string{"georadius", "georadiusbymember"} {
		cmd := t.lookup([]byte(n))
		cmd.keys = geo.RadiusKeys
	}
}

// GEOADD key [NX|XX] [CH] longitude latitude member [...]
func cmdGeoAdd(c *Client, args [][]byte) {
	zargs, err := geo.AddArgs(args, parseFloat)
	if err != nil {
		c.addError(err.Error())
		return
	}
	zaddGeneric(c, zargs, false)
	if c.dirty > 0 && c.propArgs == nil {
		c.propagateAs(zargs) // replicas and the AOF receive the ZADD, as from Redis
	}
}

// GEODIST key member1 member2 [unit]
func cmdGeoDist(c *Client, args [][]byte) {
	conv, err := geo.ParseDistUnit(args)
	if err != nil {
		c.addError(err.Error())
		return
	}
	if z, _, ok := c.lookupZSet(string(args[1])); ok {
		if d, found := geo.Dist(z, args[2], args[3], conv); found {
			c.addBulkString(d)
		} else {
			c.addNull()
		}
	}
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

// addHumanDouble replies geo.HumanDouble(f): a bulk string in RESP2, a
// double in RESP3.
func (c *Client) addHumanDouble(f float64) {
	s := geo.HumanDouble(f)
	if c.proto <= 2 {
		c.addBulkString(s)
	} else if c.replying() {
		c.out = append(append(append(c.out, ','), s...), "\r\n"...)
	}
}

// geoSearchGeneric is Redis's georadiusGeneric: every GEORADIUS* and
// GEOSEARCH* variant; the source key is args[srcIdx].
func geoSearchGeneric(c *Client, args [][]byte, srcIdx int, v geo.Variant) {
	z, _, ok := c.lookupZSet(string(args[srcIdx]))
	if !ok {
		return
	}
	a, err := geo.ParseSearch(args, v, z, parseFloat)
	if err != nil {
		c.addError(err.Error())
		return
	}
	var points []geo.Point
	if z != nil {
		buf := geo.GetPoints()
		points = a.Run(z, *buf)
		defer geo.PutPoints(buf, points)
	}
	if a.StoreKey == nil {
		c.addGeoPoints(&a, points)
		return
	}
	res := geo.StoreSet(points, a.StoreDist, c.zsetLimits())
	event := "georadiusstore"
	if v&geo.Search != 0 {
		event = "geosearchstore"
	}
	c.storeZSet(string(a.StoreKey), res, event)
}

// addGeoPoints replies a search's points with the WITH* options asked.
func (c *Client) addGeoPoints(a *geo.SearchArgs, points []geo.Point) {
	opts := 0
	for _, w := range []bool{a.WithDist, a.WithCoord, a.WithHash} {
		if w {
			opts++
		}
	}
	c.addArrayLen(len(points))
	for _, p := range points {
		if opts > 0 {
			c.addArrayLen(opts + 1)
		}
		c.addBulkString(p.Member)
		if a.WithDist {
			c.addBulkString(geo.FormatDistance(p.Dist))
		}
		if a.WithHash {
			c.addInt(int64(p.Score))
		}
		if a.WithCoord {
			c.addArrayLen(2)
			c.addHumanDouble(p.Long)
			c.addHumanDouble(p.Lat)
		}
	}
}
