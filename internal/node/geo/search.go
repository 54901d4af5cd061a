package geo

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/shardis/shardis/internal/node/value"
)

// The geo commands' grammars and GEOSEARCH's collection (Redis's geo.c:
// geoaddCommand, georadiusGeneric, geodistCommand). The parsers return a
// typed struct or an error whose text is Redis's reply.

// Errors of the grammars, with Redis's reply texts.
var (
	ErrSyntax       = errors.New("ERR syntax error")
	ErrNotInt       = errors.New("ERR value is not an integer or out of range")
	ErrNotFloat     = errors.New("ERR value is not a valid float")
	ErrUnit         = errors.New("ERR unsupported unit provided. please use M, KM, FT, MI")
	ErrMemberDecode = errors.New("ERR could not decode requested zset member")
	errRadius       = errors.New("ERR need numeric radius")
	errRadiusNeg    = errors.New("ERR radius cannot be negative")
	errCountZero    = errors.New("ERR COUNT must be > 0")
	errAnyNoCount   = errors.New("ERR the ANY argument requires COUNT argument")
	errBoxNegative  = errors.New("ERR height or width cannot be negative")
)

// FloatParser is Redis's float argument parsing (the node's one
// implementation, passed in).
type FloatParser func([]byte) (float64, bool)

func eqFold(a []byte, s string) bool { return strings.EqualFold(string(a), s) }

// ParseLongLat parses a longitude, latitude pair with Redis's checks.
func ParseLongLat(lon, lat []byte, pf FloatParser) (float64, float64, error) {
	x, ok1 := pf(lon)
	y, ok2 := pf(lat)
	if !ok1 || !ok2 {
		return 0, 0, ErrNotFloat
	}
	if x < LongMin || x > LongMax || y < LatMin || y > LatMax {
		return 0, 0, fmt.Errorf("ERR invalid longitude,latitude pair %f,%f", x, y)
	}
	return x, y, nil
}

// ParseUnit parses a unit argument into meters.
func ParseUnit(u []byte) (float64, error) {
	if m, ok := Unit(string(u)); ok {
		return m, nil
	}
	return 0, ErrUnit
}

// parseDistance parses "radius unit".
func parseDistance(args [][]byte, pf FloatParser) (radius, conv float64, err error) {
	r, ok := pf(args[0])
	if !ok {
		return 0, 0, errRadius
	}
	if r < 0 {
		return 0, 0, errRadiusNeg
	}
	conv, err = ParseUnit(args[1])
	return r, conv, err
}

// AddArgs turns GEOADD key [NX|XX] [CH] longitude latitude member ... into
// the ZADD that stores it (as Redis's geoaddCommand, which replicas and
// the AOF also receive).
func AddArgs(args [][]byte, pf FloatParser) ([][]byte, error) {
	xx, nx := false, false
	idx := 2
	for ; idx < len(args); idx++ {
		if eqFold(args[idx], "nx") {
			nx = true
		} else if eqFold(args[idx], "xx") {
			xx = true
		} else if !eqFold(args[idx], "ch") {
			break
		}
	}
	if (len(args)-idx)%3 != 0 || (xx && nx) {
		return nil, ErrSyntax
	}
	zargs := make([][]byte, 0, idx+(len(args)-idx)/3*2)
	zargs = append(zargs, []byte("zadd"))
	zargs = append(zargs, args[1:idx]...)
	for i := idx; i < len(args); i += 3 {
		x, y, err := ParseLongLat(args[i], args[i+1], pf)
		if err != nil {
			return nil, err
		}
		h, _ := Encode(x, y, StepMax)
		zargs = append(zargs, strconv.AppendUint(nil, Align52(h), 10), args[i+2])
	}
	return zargs, nil
}

// RadiusKeys returns the key positions of GEORADIUS and GEORADIUSBYMEMBER:
// the source key and a STORE/STOREDIST key.
func RadiusKeys(args [][]byte) []int {
	pos := []int{1}
	for i := 5; i+1 < len(args); i++ {
		if eqFold(args[i], "store") || eqFold(args[i], "storedist") {
			pos = append(pos, i+1)
			i++
		}
	}
	return pos
}

// MemberPos decodes a member's position (ok false when it is missing).
func MemberPos(z *value.ZSet, m []byte) (float64, float64, bool) {
	score, ok := z.Score(string(m))
	if !ok {
		return 0, 0, false
	}
	return FromScore(score)
}

// ParseDistUnit parses GEODIST key member1 member2 [unit]: the unit's
// meters (1 without one).
func ParseDistUnit(args [][]byte) (float64, error) {
	switch {
	case len(args) > 5:
		return 0, ErrSyntax
	case len(args) == 5:
		return ParseUnit(args[4])
	}
	return 1, nil
}

// Dist is GEODIST: the distance between two members in the unit conv
// (ok false when either, or the set z, is missing).
func Dist(z *value.ZSet, m1, m2 []byte, conv float64) (string, bool) {
	if z == nil {
		return "", false
	}
	x1, y1, ok1 := MemberPos(z, m1)
	x2, y2, ok2 := MemberPos(z, m2)
	if !ok1 || !ok2 {
		return "", false
	}
	return FormatDistance(Distance(x1, y1, x2, y2) / conv), true
}

// Variant is which of Redis's georadiusGeneric callers runs.
type Variant int

// The variants, as Redis's georadiusGeneric flags.
const (
	RadiusCoords Variant = 1 << iota // GEORADIUS
	RadiusMember                     // GEORADIUSBYMEMBER
	NoStore                          // the _RO forms
	Search                           // GEOSEARCH
	SearchStore                      // GEOSEARCHSTORE
)

// Sort orders of a search.
const (
	SortNone = iota
	SortAsc
	SortDesc
)

// SearchArgs are a search's parsed arguments.
type SearchArgs struct {
	Shape Shape
	// StoreKey is STORE/STOREDIST's key or GEOSEARCHSTORE's destination
	// (nil: reply).
	StoreKey                      []byte
	StoreDist                     bool
	WithDist, WithHash, WithCoord bool
	Any                           bool
	Sort                          int
	Count                         int64
}

// searchParser holds the state of one parse.
type searchParser struct {
	a                                    SearchArgs
	v                                    Variant
	z                                    *value.ZSet
	pf                                   FloatParser
	fromMember, fromLoc, byRadius, byBox bool
}

// ParseSearch parses the arguments of any GEORADIUS* or GEOSEARCH* variant
// v on the sorted set z (nil: the key is missing), with Redis's rules and
// error texts.
func ParseSearch(args [][]byte, v Variant, z *value.ZSet, pf FloatParser) (SearchArgs, error) {
	p := &searchParser{v: v, z: z, pf: pf}
	var base int
	var err error
	switch {
	case v&RadiusCoords != 0:
		base = 6
		if p.a.Shape.Long, p.a.Shape.Lat, err = ParseLongLat(args[2], args[3], pf); err != nil {
			return p.a, err
		}
		p.a.Shape.Radius, p.a.Shape.Conversion, err = parseDistance(args[4:], pf)
	case v&RadiusMember != 0:
		base = 5
		if z == nil {
			break
		}
		var ok bool
		if p.a.Shape.Long, p.a.Shape.Lat, ok = MemberPos(z, args[2]); !ok {
			return p.a, ErrMemberDecode
		}
		p.a.Shape.Radius, p.a.Shape.Conversion, err = parseDistance(args[3:], pf)
	case v&SearchStore != 0:
		base = 3
		p.a.StoreKey = args[1]
	default:
		base = 2
	}
	if err != nil {
		return p.a, err
	}
	rest := args[base:]
	for i := 0; i < len(rest); i++ {
		n, err := p.option(rest, i)
		if err != nil {
			return p.a, err
		}
		i += n
	}
	return p.a, p.check(string(args[0]))
}

// option parses the option at rest[i]; it returns how many arguments it
// took beyond the keyword.
func (p *searchParser) option(rest [][]byte, i int) (int, error) {
	a, more, search := rest[i], len(rest)-i-1, p.v&Search != 0
	var err error
	switch {
	case eqFold(a, "withdist"):
		p.a.WithDist = true
	case eqFold(a, "withhash"):
		p.a.WithHash = true
	case eqFold(a, "withcoord"):
		p.a.WithCoord = true
	case eqFold(a, "any"):
		p.a.Any = true
	case eqFold(a, "asc"):
		p.a.Sort = SortAsc
	case eqFold(a, "desc"):
		p.a.Sort = SortDesc
	case eqFold(a, "count") && more >= 1:
		n, ok := value.ParseInt(rest[i+1])
		if !ok {
			return 0, ErrNotInt
		}
		if n <= 0 {
			return 0, errCountZero
		}
		p.a.Count = n
		return 1, nil
	case (eqFold(a, "store") || eqFold(a, "storedist")) && more >= 1 && p.v&(NoStore|Search) == 0:
		p.a.StoreKey, p.a.StoreDist = rest[i+1], eqFold(a, "storedist")
		return 1, nil
	case eqFold(a, "storedist") && search && p.v&SearchStore != 0:
		p.a.StoreDist = true
	case eqFold(a, "frommember") && more >= 1 && search && !p.fromLoc:
		if p.z != nil {
			var ok bool
			if p.a.Shape.Long, p.a.Shape.Lat, ok = MemberPos(p.z, rest[i+1]); !ok {
				return 0, ErrMemberDecode
			}
		}
		p.fromMember = true
		return 1, nil
	case eqFold(a, "fromlonlat") && more >= 2 && search && !p.fromMember:
		p.a.Shape.Long, p.a.Shape.Lat, err = ParseLongLat(rest[i+1], rest[i+2], p.pf)
		p.fromLoc = true
		return 2, err
	case eqFold(a, "byradius") && more >= 2 && search && !p.byBox:
		p.a.Shape.Radius, p.a.Shape.Conversion, err = parseDistance(rest[i+1:], p.pf)
		p.a.Shape.Box, p.byRadius = false, true
		return 2, err
	case eqFold(a, "bybox") && more >= 3 && search && !p.byRadius:
		return 3, p.box(rest[i+1:])
	default:
		return 0, ErrSyntax
	}
	return 0, nil
}

// box parses BYBOX's width height unit.
func (p *searchParser) box(args [][]byte) error {
	w, ok := p.pf(args[0])
	if !ok {
		return errors.New("ERR need numeric width")
	}
	h, ok := p.pf(args[1])
	if !ok {
		return errors.New("ERR need numeric height")
	}
	if h < 0 || w < 0 {
		return errBoxNegative
	}
	conv, err := ParseUnit(args[2])
	if err != nil {
		return err
	}
	p.a.Shape.Width, p.a.Shape.Height, p.a.Shape.Conversion, p.a.Shape.Box = w, h, conv, true
	p.byBox = true
	return nil
}

// check applies the rules between options (name is the command's name as
// given).
func (p *searchParser) check(name string) error {
	a := &p.a
	if a.StoreKey != nil && (a.WithDist || a.WithHash || a.WithCoord) {
		what := "STORE option in GEORADIUS"
		if p.v&SearchStore != 0 {
			what = "GEOSEARCHSTORE"
		}
		return errors.New("ERR " + what + " is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
	}
	if p.v&Search != 0 && !(p.fromMember || p.fromLoc) {
		return errors.New("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + name)
	}
	if p.v&Search != 0 && !(p.byRadius || p.byBox) {
		return errors.New("ERR exactly one of BYRADIUS and BYBOX can be specified for " + name)
	}
	if a.Any && a.Count == 0 {
		return errAnyNoCount
	}
	if a.Count != 0 && a.Sort == SortNone && !a.Any {
		a.Sort = SortAsc
	}
	return nil
}

// Point is one search result; Dist is in the search's unit.
type Point struct {
	Long, Lat, Dist, Score float64
	Member                 string
}

// Run searches z: the members inside the shape, cell by cell in Redis's
// order and by score within a cell (ANY stops at COUNT), sorted and cut to
// COUNT as the arguments ask. The points are appended to dst[:0], so a
// caller that hands back the last result's buffer (GetPoints, PutPoints)
// allocates nothing once it is large enough.
func (a *SearchArgs) Run(z *value.ZSet, dst []Point) []Point {
	limit := int64(0)
	if a.Any {
		limit = a.Count
	}
	points := collect(z, &a.Shape, limit, dst[:0])
	switch a.Sort {
	case SortAsc:
		slices.SortStableFunc(points, func(p, q Point) int { return cmpFloat(p.Dist, q.Dist) })
	case SortDesc:
		slices.SortStableFunc(points, func(p, q Point) int { return cmpFloat(q.Dist, p.Dist) })
	}
	if a.Count != 0 && int64(len(points)) > a.Count {
		points = points[:a.Count]
	}
	for i := range points {
		points[i].Dist /= a.Shape.Conversion
	}
	return points
}

// StoreSet is the sorted set STORE (or, with dist, STOREDIST) writes:
// the points with their scores (or distances).
func StoreSet(points []Point, dist bool, lim value.ZSetLimits) *value.ZSet {
	z := value.NewZSet()
	for _, p := range points {
		score := p.Score
		if dist {
			score = p.Dist
		}
		z.Set(p.Member, score, lim)
	}
	return z
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

// collect appends to out the members of z inside shape; limit > 0 stops
// once that many are found. Distances are in meters. Each cell is one
// descent of the set (to its first score) and a walk up to its last.
func collect(z *value.ZSet, shape *Shape, limit int64, out []Point) []Point {
	var cells [9]Hash
	for _, cell := range shape.Cells(&cells) {
		if limit > 0 && int64(len(out)) >= limit {
			break
		}
		min, max := ScoreRange(cell)
		lo := z.CountWhile(func(s float64, _ string) bool { return s < min })
		z.RangeByRank(lo, z.Len()-1, false, func(m string, s float64) bool {
			if s >= max {
				return false // past the cell
			}
			if x, y, d, in := shape.Within(s); in {
				out = append(out, Point{Long: x, Lat: y, Dist: d, Score: s, Member: m})
			}
			return !(limit > 0 && int64(len(out)) >= limit)
		})
	}
	return out
}

// pointBufs holds the buffers of finished searches (GetPoints).
var pointBufs sync.Pool

// maxPooledPoints bounds the buffers kept: a search that found more
// leaves its buffer to the collector.
const maxPooledPoints = 4096

// GetPoints returns an empty buffer for Run, with the capacity of an
// earlier search's when one was handed back.
func GetPoints() *[]Point {
	if b, ok := pointBufs.Get().(*[]Point); ok {
		return b
	}
	return new([]Point)
}

// PutPoints hands back a buffer from GetPoints holding Run's result
// points, once they are no longer used; it drops the members' references.
func PutPoints(b *[]Point, points []Point) {
	if cap(points) > maxPooledPoints {
		return
	}
	clear(points)
	*b = points[:0]
	pointBufs.Put(b)
}
