package geo

import (
	"math"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/shardis/shardis/internal/node/value"
)

func args(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

func pf(b []byte) (float64, bool) {
	f, err := strconv.ParseFloat(string(b), 64)
	return f, err == nil
}

// sicily is Redis's documentation example.
func sicily() *value.ZSet {
	z := value.NewZSet()
	for _, m := range []struct {
		name      string
		long, lat float64
	}{{"Palermo", 13.361389, 38.115556}, {"Catania", 15.087269, 37.502669}, {"edge1", 12.758489, 38.788135}, {"edge2", 17.241510, 38.788135}} {
		s, _ := Score(m.long, m.lat)
		z.Add(m.name, s)
	}
	return z
}

func TestParseSearchErrors(t *testing.T) {
	z := sicily()
	for _, c := range []struct {
		in  string
		v   Variant
		err string
	}{
		{"GEOSEARCH k FROMLONLAT 15 37 BYRADIUS 200 km ASC", Search, ""},
		{"GEOSEARCH k BYRADIUS 200 km", Search, "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCH"},
		{"geosearch k FROMMEMBER Palermo", Search, "ERR exactly one of BYRADIUS and BYBOX can be specified for geosearch"},
		{"GEOSEARCH k FROMMEMBER nobody BYBOX 1 1 km", Search, "ERR could not decode requested zset member"},
		{"GEOSEARCH k FROMMEMBER Palermo FROMLONLAT 1 1 BYRADIUS 1 m", Search, "ERR syntax error"},
		{"GEOSEARCH k FROMLONLAT 200 1 BYRADIUS 1 m", Search, "ERR invalid longitude,latitude pair 200.000000,1.000000"},
		{"GEOSEARCH k FROMLONLAT 1 1 BYBOX -1 1 m", Search, "ERR height or width cannot be negative"},
		{"GEOSEARCH k FROMLONLAT 1 1 BYBOX x 1 m", Search, "ERR need numeric width"},
		{"GEOSEARCH k FROMLONLAT 1 1 BYRADIUS 1 yd", Search, "ERR unsupported unit provided. please use M, KM, FT, MI"},
		{"GEOSEARCH k FROMLONLAT 1 1 BYRADIUS 1 m ANY", Search, "ERR the ANY argument requires COUNT argument"},
		{"GEOSEARCH k FROMLONLAT 1 1 BYRADIUS 1 m COUNT 0", Search, "ERR COUNT must be > 0"},
		{"GEOSEARCH k FROMLONLAT 1 1 BYRADIUS 1 m STORE x", Search, "ERR syntax error"},
		{"GEOSEARCHSTORE d k FROMLONLAT 1 1 BYRADIUS 1 m WITHDIST", Search | SearchStore, "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options"},
		{"GEORADIUS k 15 37 200 km STORE d WITHHASH", RadiusCoords, "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options"},
		{"GEORADIUS_RO k 15 37 200 km STORE d", RadiusCoords | NoStore, "ERR syntax error"},
		{"GEORADIUS k 15 37 -1 km", RadiusCoords, "ERR radius cannot be negative"},
		{"GEORADIUSBYMEMBER k nobody 1 km", RadiusMember, "ERR could not decode requested zset member"},
	} {
		_, err := ParseSearch(args(c.in), c.v, z, pf)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.err {
			t.Errorf("%s: %q, want %q", c.in, got, c.err)
		}
	}
	// A missing key parses without looking members up.
	if _, err := ParseSearch(args("GEORADIUSBYMEMBER k nobody x km"), RadiusMember, nil, pf); err != nil {
		t.Errorf("missing key: %v", err)
	}
}

// TestSearchRun checks Redis's documented GEOSEARCH results.
func TestSearchRun(t *testing.T) {
	z := sicily()
	a, err := ParseSearch(args("GEOSEARCH k FROMLONLAT 15 37 BYRADIUS 200 km ASC"), Search, z, pf)
	if err != nil {
		t.Fatal(err)
	}
	p := a.Run(z, nil)
	if len(p) != 2 || p[0].Member != "Catania" || p[1].Member != "Palermo" || FormatDistance(p[0].Dist) != "56.4413" {
		t.Fatalf("BYRADIUS: %+v", p)
	}
	a, _ = ParseSearch(args("GEOSEARCH k FROMLONLAT 15 37 BYBOX 400 400 km DESC COUNT 3"), Search, z, pf)
	p = a.Run(z, nil)
	if len(p) != 3 || p[0].Member != "edge1" || p[2].Member != "Palermo" {
		t.Fatalf("BYBOX DESC COUNT 3: %+v", p)
	}
	a, _ = ParseSearch(args("GEOSEARCH k FROMMEMBER Palermo BYRADIUS 1000 km COUNT 1 ANY"), Search, z, pf)
	if p = a.Run(z, nil); len(p) != 1 {
		t.Fatalf("ANY COUNT 1: %+v", p)
	}
	zargs, err := AddArgs(args("GEOADD k NX CH 13.361389 38.115556 Palermo"), pf)
	if err != nil || len(zargs) != 6 || string(zargs[4]) != "3479099956230698" {
		t.Errorf("GEOADD as ZADD: %q %v", zargs, err)
	}
	if _, err := AddArgs(args("GEOADD k NX XX 1 1 m"), pf); err != ErrSyntax {
		t.Errorf("NX XX: %v", err)
	}
	if d, ok := Dist(z, []byte("Palermo"), []byte("Catania"), 1000); !ok || d != "166.2742" {
		t.Errorf("GEODIST: %s %v", d, ok)
	}
}

// FuzzParseSearch runs the grammar on arbitrary arguments: no panic.
func FuzzParseSearch(f *testing.F) {
	f.Add("GEOSEARCH k FROMMEMBER Palermo BYBOX 1 2 km WITHCOORD COUNT 3 ANY")
	f.Add("GEORADIUS k 15 37 200 km STOREDIST d")
	z := sicily()
	f.Fuzz(func(t *testing.T, in string) {
		a := args(in)
		if len(a) < 6 {
			return
		}
		for _, v := range []Variant{Search, Search | SearchStore, RadiusCoords, RadiusMember | NoStore} {
			if sa, err := ParseSearch(a, v, z, pf); err == nil && sa.Shape.Conversion > 0 {
				sa.Run(z, nil)
			}
		}
	})
}

func TestRadiusKeys(t *testing.T) {
	if got := RadiusKeys(args("GEORADIUS k 1 2 3 km STORE d")); len(got) != 2 || got[1] != 7 {
		t.Errorf("STORE: %v", got)
	}
	if got := RadiusKeys(args("GEORADIUSBYMEMBER k m 3 km STOREDIST d COUNT 1")); len(got) != 2 || got[1] != 6 {
		t.Errorf("STOREDIST: %v", got)
	}
	if got := RadiusKeys(args("GEORADIUS k 1 2 3 km")); len(got) != 1 {
		t.Errorf("no store: %v", got)
	}
}

// BenchmarkSearch is GEOSEARCH FROMLONLAT 15 40 BYRADIUS 20 km ASC on
// 100k members spread over 10x10 degrees (scripts/bench-streams.sh's set).
func BenchmarkSearch(b *testing.B) {
	z := value.NewZSet()
	lim := value.ZSetLimits{Entries: 128, Value: 64}
	rng := uint64(1)
	next := func() float64 {
		rng = rng*6364136223846793005 + 1442695040888963407
		return float64(rng>>11) / (1 << 53)
	}
	for i := 0; i < 100000; i++ {
		s, _ := Score(10+10*next(), 35+10*next())
		z.Set("m"+strconv.Itoa(i), s, lim)
	}
	a, err := ParseSearch(args("GEOSEARCH k FROMLONLAT 15 40 BYRADIUS 20 km ASC"), Search, z, pf)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	found := 0
	c0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf := GetPoints()
		p := a.Run(z, *buf)
		found = len(p)
		PutPoints(buf, p)
	}
	b.ReportMetric(float64(found), "found")
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user+system CPU time in ns: unlike the wall
// clock, it does not depend on the machine's load.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// TestInRadiusIsDistance checks the fast radius test against the plain
// rule (Distance <= radius, and that distance) on random points near the
// boundary and far from it.
func TestInRadiusIsDistance(t *testing.T) {
	rng := uint64(7)
	next := func() float64 {
		rng = rng*6364136223846793005 + 1442695040888963407
		return float64(rng>>11) / (1 << 53)
	}
	for _, radius := range []float64{0, 1, 20000, 500000, 5000000, 20000000} {
		for i := 0; i < 20000; i++ {
			s := Shape{Long: -180 + 360*next(), Lat: -85 + 170*next(), Radius: radius, Conversion: 1}
			long, lat := s.Long+(next()-0.5)*radius/50000, s.Lat+(next()-0.5)*radius/50000
			if i%3 == 0 {
				long, lat = -180+360*next(), -85+170*next()
			}
			long, lat = clamp(long, LongMin, LongMax), clamp(lat, LatMin, LatMax)
			want := Distance(s.Long, s.Lat, long, lat)
			d, in := s.inRadius(long, lat)
			if in != (want <= radius) || (in && d != want) {
				t.Fatalf("radius %v centre %v,%v point %v,%v: inRadius %v %v, Distance %v", radius, s.Long, s.Lat, long, lat, d, in, want)
			}
		}
	}
}

// TestInRadiusAtTheEdge: points a hair inside and outside the circle, in
// every direction and at every latitude Redis allows, get the same answer
// and distance from inRadius as from Distance (the latitude and longitude
// bands never cut a point inside).
func TestInRadiusAtTheEdge(t *testing.T) {
	rng := uint64(11)
	next := func() float64 {
		rng = rng*6364136223846793005 + 1442695040888963407
		return float64(rng>>11) / (1 << 53)
	}
	in, out := 0, 0
	for _, radius := range []float64{1, 300, 20000, 500000, 5000000} {
		for i := 0; i < 20000; i++ {
			s := Shape{Long: -180 + 360*next(), Lat: -85 + 170*next(), Radius: radius, Conversion: 1}
			// The destination point at bearing th and distance d (a
			// sphere of earthRadius), d within 1e-6 of the radius.
			th, d := 2*math.Pi*next(), radius*(1+(next()-0.5)*2e-6)
			lat1, lon1, ad := degRad(s.Lat), degRad(s.Long), d/earthRadius
			lat2 := math.Asin(math.Sin(lat1)*math.Cos(ad) + math.Cos(lat1)*math.Sin(ad)*math.Cos(th))
			lon2 := lon1 + math.Atan2(math.Sin(th)*math.Sin(ad)*math.Cos(lat1), math.Cos(ad)-math.Sin(lat1)*math.Sin(lat2))
			long, lat := math.Remainder(lon2*180/math.Pi, 360), lat2*180/math.Pi
			if lat > LatMax || lat < LatMin {
				continue
			}
			want := Distance(s.Long, s.Lat, long, lat)
			got, ok := s.inRadius(long, lat)
			if ok != (want <= radius) || (ok && got != want) {
				t.Fatalf("radius %v centre %v,%v point %v,%v: inRadius %v %v, Distance %v", radius, s.Long, s.Lat, long, lat, got, ok, want)
			}
			if ok {
				in++
			} else {
				out++
			}
		}
	}
	if in < 10000 || out < 10000 {
		t.Fatalf("%d points inside, %d outside: the edge is not where the test aims", in, out)
	}
}

// TestFromScoreIsDecodeCenter: FromScore gives the bits of Decode and
// Center at StepMax, for random scores and the extremes.
func TestFromScoreIsDecodeCenter(t *testing.T) {
	rng := uint64(5)
	scores := []float64{0, 1, 1<<52 - 1, 3479099956230698}
	for i := 0; i < 100000; i++ {
		rng = rng*6364136223846793005 + 1442695040888963407
		scores = append(scores, float64(rng>>12))
	}
	for _, sc := range scores {
		a, ok := Decode(Hash{Bits: uint64(sc), Step: StepMax})
		wantLong, wantLat := a.Center()
		long, lat, ok2 := FromScore(sc)
		if ok != ok2 || math.Float64bits(long) != math.Float64bits(wantLong) || math.Float64bits(lat) != math.Float64bits(wantLat) {
			t.Fatalf("score %v: FromScore %v,%v,%v; Decode+Center %v,%v,%v", sc, long, lat, ok2, wantLong, wantLat, ok)
		}
	}
}

func TestDeinterleave(t *testing.T) {
	for _, v := range []uint64{0, 1, 2, 0xFFFFFFFFFFFFFFFF, 0x123456789ABCDEF0, 3479099956230698} {
		var x, y uint64
		for i := 0; i < 32; i++ {
			x |= (v >> (2 * i) & 1) << i
			y |= (v >> (2*i + 1) & 1) << i
		}
		if got := deinterleave(v); got != x|y<<32 {
			t.Errorf("deinterleave(%x) = %x, want %x", v, got, x|y<<32)
		}
	}
}

func TestParseDistUnit(t *testing.T) {
	if c, err := ParseDistUnit(args("GEODIST k a b KM")); c != 1000 || err != nil {
		t.Errorf("KM: %v %v", c, err)
	}
	if c, err := ParseDistUnit(args("GEODIST k a b")); c != 1 || err != nil {
		t.Errorf("no unit: %v %v", c, err)
	}
	if _, err := ParseDistUnit(args("GEODIST k a b km x")); err != ErrSyntax {
		t.Errorf("extra argument: %v", err)
	}
	if _, err := ParseDistUnit(args("GEODIST k a b yd")); err != ErrUnit {
		t.Errorf("bad unit: %v", err)
	}
	if _, ok := Dist(nil, []byte("a"), []byte("b"), 1); ok {
		t.Error("GEODIST on a missing key found a distance")
	}
}
