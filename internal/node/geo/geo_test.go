package geo

import (
	"math"
	"testing"
)

// The figures of Redis's own GEOADD/GEOHASH/GEODIST documentation
// (redis.io, Sicily example), which redis-server 7.0 returns.
func TestRedisDocumentationFigures(t *testing.T) {
	for _, c := range []struct {
		name      string
		long, lat float64
		score     float64
		hash      string
	}{
		{"Palermo", 13.361389, 38.115556, 3479099956230698, "sqc8b49rny0"},
		{"Catania", 15.087269, 37.502669, 3479447370796909, "sqdtr74hyu0"},
	} {
		s, ok := Score(c.long, c.lat)
		if !ok || s != c.score {
			t.Errorf("%s: score %.0f, want %.0f", c.name, s, c.score)
		}
		if h, _ := String11(s); h != c.hash {
			t.Errorf("%s: geohash %s, want %s", c.name, h, c.hash)
		}
	}
	x1, y1, _ := FromScore(3479099956230698)
	x2, y2, _ := FromScore(3479447370796909)
	if d := FormatDistance(Distance(x1, y1, x2, y2)); d != "166274.1516" {
		t.Errorf("Palermo-Catania %s m, want 166274.1516", d)
	}
	if d := FormatDistance(Distance(x1, y1, x2, y2) / 1000); d != "166.2742" {
		t.Errorf("Palermo-Catania %s km, want 166.2742", d)
	}
}

func TestEncodeLimits(t *testing.T) {
	if _, ok := Score(181, 0); ok {
		t.Error("longitude 181 accepted")
	}
	if _, ok := Score(0, 85.06); ok {
		t.Error("latitude 85.06 accepted")
	}
	// Every cell decodes around the point it encodes.
	for _, p := range [][2]float64{{0, 0}, {-180, -85.05112878}, {180, 85.05112878}, {-0.0001, 51.5}} {
		s, ok := Score(p[0], p[1])
		if !ok {
			t.Fatalf("%v refused", p)
		}
		x, y, _ := FromScore(s)
		if d := Distance(p[0], p[1], x, y); d > 1 {
			t.Errorf("%v decodes %g m away", p, d)
		}
	}
}

func TestFormatDistance(t *testing.T) {
	for in, want := range map[float64]string{0: "0.0000", 0.00005: "0.0000", 0.00015: "0.0001" /* 1.4999999999999998 scaled, as llrint sees it */, 1.5: "1.5000",
		-2.25: "-2.2500", 123456.78901: "123456.7890", -0.00001: "0.0000"} {
		if got := FormatDistance(in); got != want {
			t.Errorf("FormatDistance(%g) = %s, want %s", in, got, want)
		}
	}
}

func TestCellsOrderAndNeighbours(t *testing.T) {
	s := Shape{Long: 15, Lat: 37, Radius: 200, Conversion: 1000}
	var buf [9]Hash
	cells := s.Cells(&buf)
	if len(cells) == 0 || len(cells) > 9 {
		t.Fatalf("%d cells", len(cells))
	}
	h, _ := Encode(15, 37, cells[0].Step)
	if cells[0] != h {
		t.Fatalf("first cell %v, want the centre's %v", cells[0], h)
	}
	for _, c := range cells[1:] {
		if c.Step != h.Step || c == h {
			t.Fatalf("neighbour %v of %v", c, h)
		}
	}
}

// A score outside [0, 2^64) converts as redis-server's (uint64_t) cast on
// x86-64 (the values redis-server 7.0 decodes in compat/26-geo.txt).
func TestCUint64LikeX86(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		f    float64
		want uint64
	}{
		{inf, 0},
		{-inf, 1 << 63},
		{math.NaN(), 1 << 63},
		{-1, math.MaxUint64},
		{-1.5, math.MaxUint64},
		{1e300, 0},
		{two63, 1 << 63},
		{two63 * 1.5, 3 << 62},
		{0.5, 0},
		{3479099956230698, 3479099956230698},
	} {
		if got := cUint64(c.f); got != c.want {
			t.Errorf("cUint64(%g) = %#x, want %#x", c.f, got, c.want)
		}
	}
}
