// Package geo holds the geohash arithmetic of Redis's geo commands, as
// redis-server 7.0 computes it, so that the scores GEOADD stores and the
// results of GEOSEARCH match redis-server's: a position is stored in a
// sorted set as a 52-bit interleaved geohash (26 bits of latitude over
// [-85.05112878, 85.05112878], 26 of longitude over [-180, 180]), and a
// search visits the cell of the centre and its eight neighbours at a step
// fitted to the radius, then filters by distance on the sphere.
//
// Trigonometry comes from Go's math package, whose sin, cos and asin can
// differ from glibc's in the last bit: distances printed to 4 decimals agree
// except in rare ties, and so does the membership of a point that lies on
// the search boundary to within about 1e-9 m.
//
// The commands' grammars (GEOADD as the ZADD it becomes, GEODIST's unit,
// GEORADIUS*'s and GEOSEARCH*'s FROMMEMBER/FROMLONLAT, BYRADIUS/BYBOX and
// options) and the search over a sorted set are in search.go; the node
// keeps thin handlers that look the key up and write the reply.
package geo

import (
	"math"
	"strconv"
	"strings"
)

// The coordinate limits of EPSG:900913 that Redis uses, and the step of
// stored scores.
const (
	LatMin  = -85.05112878
	LatMax  = 85.05112878
	LongMin = -180.0
	LongMax = 180.0
	StepMax = 26 // 52 bits

	earthRadius = 6372797.560856 // meters, Redis's EARTH_RADIUS_IN_METERS
	mercatorMax = 20037726.37
	degToRad    = math.Pi / 180.0
)

// Hash is a geohash of 2*Step bits.
type Hash struct {
	Bits uint64
	Step uint8
}

// IsZero reports a hash that selects nothing (a neighbour cleared by the
// search).
func (h Hash) IsZero() bool { return h.Bits == 0 && h.Step == 0 }

// Range is one coordinate's interval.
type Range struct{ Min, Max float64 }

// Area is the cell of a hash.
type Area struct {
	Hash      Hash
	Long, Lat Range
}

var (
	longRange = Range{LongMin, LongMax}
	latRange  = Range{LatMin, LatMax}
)

func interleave(xlo, ylo uint32) uint64 {
	b := [...]uint64{0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF}
	s := [...]uint{1, 2, 4, 8, 16}
	x, y := uint64(xlo), uint64(ylo)
	for i := 4; i >= 0; i-- {
		x = (x | x<<s[i]) & b[i]
		y = (y | y<<s[i]) & b[i]
	}
	return x | y<<1
}

func deinterleave(v uint64) uint64 {
	// The even bits of v to the low half, the odd bits to the high half,
	// in the steps of Redis's table, unrolled.
	x, y := v&0x5555555555555555, (v>>1)&0x5555555555555555
	x = (x | x>>1) & 0x3333333333333333
	y = (y | y>>1) & 0x3333333333333333
	x = (x | x>>2) & 0x0F0F0F0F0F0F0F0F
	y = (y | y>>2) & 0x0F0F0F0F0F0F0F0F
	x = (x | x>>4) & 0x00FF00FF00FF00FF
	y = (y | y>>4) & 0x00FF00FF00FF00FF
	x = (x | x>>8) & 0x0000FFFF0000FFFF
	y = (y | y>>8) & 0x0000FFFF0000FFFF
	x = (x | x>>16) & 0x00000000FFFFFFFF
	y = (y | y>>16) & 0x00000000FFFFFFFF
	return x | y<<32
}

// encode is geohashEncode over the given ranges; ok is false outside them.
func encode(lr, ar Range, long, lat float64, step uint8) (Hash, bool) {
	if step > 32 || step == 0 {
		return Hash{}, false
	}
	if long > LongMax || long < LongMin || lat > LatMax || lat < LatMin {
		return Hash{}, false
	}
	if lat < ar.Min || lat > ar.Max || long < lr.Min || long > lr.Max {
		return Hash{}, false
	}
	latOff := (lat - ar.Min) / (ar.Max - ar.Min)
	longOff := (long - lr.Min) / (lr.Max - lr.Min)
	latOff *= float64(uint64(1) << step)
	longOff *= float64(uint64(1) << step)
	return Hash{Bits: interleave(uint32(latOff), uint32(longOff)), Step: step}, true
}

// Encode returns the hash of a position at step (1..32) over Redis's
// ranges; ok is false for a position outside them.
func Encode(long, lat float64, step uint8) (Hash, bool) {
	return encode(longRange, latRange, long, lat, step)
}

// decode is geohashDecode.
func decode(lr, ar Range, h Hash) (Area, bool) {
	if h.IsZero() {
		return Area{}, false
	}
	sep := deinterleave(h.Bits)
	latScale := ar.Max - ar.Min
	longScale := lr.Max - lr.Min
	ilat := uint32(sep)
	ilong := uint32(sep >> 32)
	div := float64(uint64(1) << h.Step)
	return Area{
		Hash: h,
		Lat:  Range{ar.Min + (float64(ilat)*1.0/div)*latScale, ar.Min + ((float64(ilat)+1)*1.0/div)*latScale},
		Long: Range{lr.Min + (float64(ilong)*1.0/div)*longScale, lr.Min + ((float64(ilong)+1)*1.0/div)*longScale},
	}, true
}

// Decode returns the cell of a hash over Redis's ranges.
func Decode(h Hash) (Area, bool) { return decode(longRange, latRange, h) }

// Center returns the centre of a cell, clamped to the limits.
func (a Area) Center() (long, lat float64) {
	// Plain comparisons clamp as math.Max/Min do here: no NaN, and a
	// -0 centre stays -0 either way.
	return clamp((a.Long.Min+a.Long.Max)/2, LongMin, LongMax), clamp((a.Lat.Min+a.Lat.Max)/2, LatMin, LatMax)
}

func clamp(v, lo, hi float64) float64 {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// Score returns the sorted-set score GEOADD stores for a position.
func Score(long, lat float64) (float64, bool) {
	h, ok := Encode(long, lat, StepMax)
	if !ok {
		return 0, false
	}
	return float64(Align52(h)), true
}

// FromScore decodes a stored score into the centre of its cell: Decode
// at StepMax and Center, the same operations in the same order (so the
// same bits, TestFromScoreIsDecodeCenter), without the Area in between;
// a search decodes every candidate. ok is always true (a step-26 hash is
// never the zero hash); it stays for the callers' shape.
func FromScore(score float64) (long, lat float64, ok bool) {
	sep := deinterleave(cUint64(score))
	const div = float64(uint64(1) << StepMax)
	ilat, ilong := float64(uint32(sep)), float64(uint32(sep>>32))
	latScale, longScale := latRange.Max-latRange.Min, longRange.Max-longRange.Min
	latMin := latRange.Min + (ilat/div)*latScale
	latMax := latRange.Min + ((ilat+1)/div)*latScale
	longMin := longRange.Min + (ilong/div)*longScale
	longMax := longRange.Min + ((ilong+1)/div)*longScale
	return clamp((longMin+longMax)/2, LongMin, LongMax), clamp((latMin+latMax)/2, LatMin, LatMax), true
}

// two63 is 2^63 as a double.
const two63 = float64(1 << 63)

// cUint64 converts a score to bits as redis-server's (uint64_t) cast of a
// double does in the x86-64 code gcc generates for it (C leaves the cast
// undefined outside [0, 2^64)): CVTTSD2SI, which gives 1<<63 for NaN and
// for values out of int64's range, after subtracting 2^63 from values of
// 2^63 or more, whose bit 63 is then flipped back. So a score no GEOADD
// wrote (+inf, -1, 1e300, from ZADD) decodes to the place redis-server
// 7.0 on x86-64 decodes it to, on every platform; Go's own conversion of
// such values is implementation-defined.
func cUint64(f float64) uint64 {
	if f >= two63 {
		return uint64(cvttsd2si(f-two63)) ^ (1 << 63)
	}
	return uint64(cvttsd2si(f))
}

// cvttsd2si truncates f to an int64 as x86-64's CVTTSD2SI does: NaN and
// values outside int64's range give math.MinInt64.
func cvttsd2si(f float64) int64 {
	if f != f || f >= two63 || f < -two63 {
		return math.MinInt64
	}
	return int64(f)
}

// Align52 shifts a hash's bits to the 52-bit score scale.
func Align52(h Hash) uint64 { return h.Bits << (52 - uint(h.Step)*2) }

// String11 is GEOHASH's answer for a score: the standard 11-character
// base32 geohash, computed over latitude [-90, 90] (the last character is
// always '0', as Redis has only 52 bits).
func String11(score float64) (string, bool) {
	long, lat, ok := FromScore(score)
	if !ok {
		return "", false
	}
	h, _ := encode(Range{-180, 180}, Range{-90, 90}, long, lat, 26)
	const alphabet = "0123456789bcdefghjkmnpqrstuvwxyz"
	var buf [11]byte
	for i := 0; i < 11; i++ {
		idx := 0
		if i < 10 {
			idx = int(h.Bits>>(52-uint((i+1)*5))) & 0x1f
		}
		buf[i] = alphabet[idx]
	}
	return string(buf[:]), true
}

func moveX(h *Hash, d int) {
	if d == 0 {
		return
	}
	x := h.Bits & 0xaaaaaaaaaaaaaaaa
	y := h.Bits & 0x5555555555555555
	zz := uint64(0x5555555555555555) >> (64 - uint(h.Step)*2)
	if d > 0 {
		x += zz + 1
	} else {
		x |= zz
		x -= zz + 1
	}
	x &= 0xaaaaaaaaaaaaaaaa >> (64 - uint(h.Step)*2)
	h.Bits = x | y
}

func moveY(h *Hash, d int) {
	if d == 0 {
		return
	}
	x := h.Bits & 0xaaaaaaaaaaaaaaaa
	y := h.Bits & 0x5555555555555555
	zz := uint64(0xaaaaaaaaaaaaaaaa) >> (64 - uint(h.Step)*2)
	if d > 0 {
		y += zz + 1
	} else {
		y |= zz
		y -= zz + 1
	}
	y &= 0x5555555555555555 >> (64 - uint(h.Step)*2)
	h.Bits = x | y
}

// Neighbours of a cell, in the order the search visits them after the
// centre: north, south, east, west, north-east, north-west, south-east,
// south-west.
type Neighbours struct {
	N, S, E, W, NE, NW, SE, SW Hash
}

func neighbours(h Hash) Neighbours {
	move := func(dx, dy int) Hash {
		n := h
		moveX(&n, dx)
		moveY(&n, dy)
		return n
	}
	return Neighbours{
		E: move(1, 0), W: move(-1, 0), S: move(0, -1), N: move(0, 1),
		SW: move(-1, -1), SE: move(1, -1), NW: move(-1, 1), NE: move(1, 1),
	}
}

// Shape is a search area: a circle (Radius > 0 or Box false) or a box,
// around a centre, in meters after Conversion (the unit's meters).
type Shape struct {
	Long, Lat     float64
	Box           bool
	Radius        float64 // circle, in the unit
	Width, Height float64 // box, in the unit
	Conversion    float64 // meters per unit
	bounds        [4]float64
	// cosLat, aMax, band and longBand, set on the first Within of a
	// circle: the cosine of the centre's latitude, and a bound of the
	// haversine term above which a point is certainly outside. band
	// bounds the latitude difference (radians) of a point that may be
	// inside; longBand, for a point inside the latitude band, its
	// longitude difference (modulo a turn).
	prepared                     bool
	cosLat, aMax, band, longBand float64
}

// estimateSteps is geohashEstimateStepsByRadius.
func estimateSteps(rangeMeters, lat float64) uint8 {
	if rangeMeters == 0 {
		return 26
	}
	step := 1
	for rangeMeters < mercatorMax {
		rangeMeters *= 2
		step++
	}
	step -= 2
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	step = max(1, min(26, step))
	return uint8(step)
}

func degRad(a float64) float64 { return a * degToRad }
func radDeg(a float64) float64 { return a / degToRad }

// boundingBox is geohashBoundingBox: min long, min lat, max long, max lat.
func (s *Shape) boundingBox() {
	height, width := s.Conversion*s.Radius, s.Conversion*s.Radius
	if s.Box {
		height, width = s.Conversion*s.Height/2, s.Conversion*s.Width/2
	}
	latDelta := radDeg(height / earthRadius)
	longDeltaTop := radDeg(width / earthRadius / math.Cos(degRad(s.Lat+latDelta)))
	longDeltaBottom := radDeg(width / earthRadius / math.Cos(degRad(s.Lat-latDelta)))
	if s.Lat < 0 {
		s.bounds[0] = s.Long - longDeltaBottom
		s.bounds[2] = s.Long + longDeltaBottom
	} else {
		s.bounds[0] = s.Long - longDeltaTop
		s.bounds[2] = s.Long + longDeltaTop
	}
	s.bounds[1] = s.Lat - latDelta
	s.bounds[3] = s.Lat + latDelta
}

// Cells returns the cells a search of s visits, in Redis's order (the
// centre's cell first), with the useless neighbours removed and
// consecutive duplicates dropped; they are stored in dst (no allocation).
func (s *Shape) Cells(dst *[9]Hash) []Hash {
	s.boundingBox()
	minLon, minLat, maxLon, maxLat := s.bounds[0], s.bounds[1], s.bounds[2], s.bounds[3]
	radius := s.Radius
	if s.Box {
		radius = math.Sqrt((s.Width/2)*(s.Width/2) + (s.Height/2)*(s.Height/2))
	}
	radius *= s.Conversion
	steps := estimateSteps(radius, s.Lat)
	h, _ := Encode(s.Long, s.Lat, steps)
	nb := neighbours(h)
	area, _ := Decode(h)
	dec := func(x Hash) Area { a, _ := Decode(x); return a }
	if dec(nb.N).Lat.Max < maxLat || dec(nb.S).Lat.Min > minLat ||
		dec(nb.E).Long.Max < maxLon || dec(nb.W).Long.Min > minLon {
		if steps > 1 {
			steps--
			h, _ = Encode(s.Long, s.Lat, steps)
			nb = neighbours(h)
			area, _ = Decode(h)
		}
	}
	if steps >= 2 {
		if area.Lat.Min < minLat {
			nb.S, nb.SW, nb.SE = Hash{}, Hash{}, Hash{}
		}
		if area.Lat.Max > maxLat {
			nb.N, nb.NE, nb.NW = Hash{}, Hash{}, Hash{}
		}
		if area.Long.Min < minLon {
			nb.W, nb.SW, nb.NW = Hash{}, Hash{}, Hash{}
		}
		if area.Long.Max > maxLon {
			nb.E, nb.SE, nb.NE = Hash{}, Hash{}, Hash{}
		}
	}
	all := []Hash{h, nb.N, nb.S, nb.E, nb.W, nb.NE, nb.NW, nb.SE, nb.SW}
	out := dst[:0]
	last := -1
	for i, c := range all {
		if c.IsZero() {
			continue
		}
		if last > 0 && c == all[last] {
			continue
		}
		out = append(out, c)
		last = i
	}
	return out
}

// ScoreRange returns the scores [min, max) of the members inside a cell.
func ScoreRange(h Hash) (min, max float64) {
	lo := Align52(h)
	h.Bits++
	return float64(lo), float64(Align52(h))
}

// Within reports whether the point of a stored score lies in s, with its
// distance from the centre in meters and its decoded position.
func (s *Shape) Within(score float64) (long, lat, dist float64, ok bool) {
	long, lat, ok = FromScore(score)
	if !ok {
		return 0, 0, 0, false
	}
	if !s.Box {
		dist, ok = s.inRadius(long, lat)
		return long, lat, dist, ok
	}
	if latDistance(lat, s.Lat) > s.Height*s.Conversion/2 {
		return long, lat, 0, false
	}
	if Distance(long, lat, s.Long, lat) > s.Width*s.Conversion/2 {
		return long, lat, 0, false
	}
	return long, lat, Distance(s.Long, s.Lat, long, lat), true
}

// inRadius is Distance(s.Long, s.Lat, long, lat) <= the radius, with the
// same distance, skipping the arcsine (and, outside the latitude or the
// longitude band, the sines) for points that are certainly outside: the haversine
// term only grows with the distance, and the bound has a margin far above
// the rounding of either side.
func (s *Shape) inRadius(long, lat float64) (float64, bool) {
	r := s.Radius * s.Conversion
	if !s.prepared {
		s.prepared, s.cosLat, s.aMax, s.band = true, math.Cos(degRad(s.Lat)), math.Inf(1), math.Inf(1)
		s.longBand = math.Inf(1)
		if h := r / (2 * earthRadius); h < math.Pi/4 {
			s.aMax = math.Sin(h) * math.Sin(h) * (1 + 1e-6)
			s.band = 2 * math.Asin(math.Sqrt(s.aMax)) * (1 + 1e-9)
			// Inside the band |lat2| <= |lat1|+band, so cos(lat2) >= cosMin
			// and the haversine term a >= cosLat*cosMin*v^2: a point whose
			// v^2 exceeds aMax/(cosLat*cosMin) is outside. The margins
			// (cosMin lowered, the band widened) are far above the
			// rounding of either side.
			if far := math.Abs(degRad(s.Lat)) + s.band; far < math.Pi/2 {
				cosMin := math.Cos(far) * (1 - 1e-9)
				if q := s.aMax / (s.cosLat * cosMin); q < 1 {
					s.longBand = 2 * math.Asin(math.Sqrt(q)) * (1 + 1e-9)
				}
			}
		}
	}
	lat1r, lat2r := degRad(s.Lat), degRad(lat)
	if math.Abs(lat2r-lat1r) > s.band {
		return 0, false // beyond the latitude band: sin((lat2r-lat1r)/2)^2 > aMax
	}
	dlong := degRad(long) - degRad(s.Long)
	if d := math.Abs(dlong); d > s.longBand && d < 2*math.Pi-s.longBand {
		return 0, false // beyond the longitude band: v^2 > aMax/(cosLat*cosMin)
	}
	u := math.Sin((lat2r - lat1r) / 2)
	if u*u > s.aMax {
		return 0, false
	}
	v := math.Sin(dlong / 2)
	if v == 0 {
		d := latDistance(s.Lat, lat)
		return d, d <= r
	}
	a := u*u + s.cosLat*math.Cos(lat2r)*v*v
	if a > s.aMax {
		return 0, false
	}
	d := 2.0 * earthRadius * math.Asin(math.Sqrt(a))
	return d, d <= r
}

func latDistance(lat1, lat2 float64) float64 {
	return earthRadius * math.Abs(degRad(lat2)-degRad(lat1))
}

// Distance is the haversine distance in meters, as geohashGetDistance.
func Distance(lon1, lat1, lon2, lat2 float64) float64 {
	lon1r, lon2r := degRad(lon1), degRad(lon2)
	v := math.Sin((lon2r - lon1r) / 2)
	if v == 0 {
		return latDistance(lat1, lat2)
	}
	lat1r, lat2r := degRad(lat1), degRad(lat2)
	u := math.Sin((lat2r - lat1r) / 2)
	a := u*u + math.Cos(lat1r)*math.Cos(lat2r)*v*v
	return 2.0 * earthRadius * math.Asin(math.Sqrt(a))
}

// FormatDistance renders a distance with four decimals as Redis's
// fixedpoint_d2string does (round half to even on the scaled value).
func FormatDistance(d float64) string {
	if d == 0 {
		return "0.0000"
	}
	v := int64(math.RoundToEven(d * 10000))
	neg := v < 0
	if neg {
		v = -v
	}
	s := strconv.FormatInt(v, 10)
	for len(s) < 5 {
		s = "0" + s
	}
	out := s[:len(s)-4] + "." + s[len(s)-4:]
	if neg {
		out = "-" + out
	}
	return out
}

// Unit returns the meters of a distance unit (m, km, ft, mi; any case).
func Unit(u string) (float64, bool) {
	switch {
	case equalFold(u, "m"):
		return 1, true
	case equalFold(u, "km"):
		return 1000, true
	case equalFold(u, "ft"):
		return 0.3048, true
	case equalFold(u, "mi"):
		return 1609.34, true
	}
	return 0, false
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		c := a[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != b[i] {
			return false
		}
	}
	return true
}

// HumanDouble formats a coordinate as Redis's addReplyHumanLongDouble: 17
// decimals with trailing zeros trimmed, "-0" as "0".
func HumanDouble(f float64) string {
	s := strconv.FormatFloat(f, 'f', 17, 64)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		return "0"
	}
	return s
}
