package stream

import (
	"testing"
)

// BenchmarkXAdd appends `f v` entries with generated IDs, as XADD s * f v.
func BenchmarkXAdd(b *testing.B) {
	s := New()
	f := fv("f", "v")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if i%200000 == 0 {
			s = New()
		}
		s.Append(f, ID{}, false, false, int64(1000+i/64), DefaultLimits)
	}
}

// BenchmarkReadGroup reads a group's new entries 10 at a time and
// acknowledges them, as XREADGROUP COUNT 10 ... > and XACK.
func BenchmarkReadGroup(b *testing.B) {
	s := New()
	f := fv("f", "v")
	for i := 0; i < 100000; i++ {
		s.Append(f, ID{}, false, false, int64(1000+i/64), DefaultLimits)
	}
	g := s.CreateGroup("g", ID{}, 0)
	c, _ := g.Touch([]byte("c"), 0)
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		if _, ok := s.LastValid(); !ok {
			b.Fatal("empty")
		}
		es := s.ReadNew(g.LastID, 10, &GroupRead{Group: g, Consumer: c}, 0)
		if len(es) == 0 {
			b.StopTimer()
			g.LastID = ID{}
			for _, na := range g.pel.items {
				g.Ack(na.ID)
			}
			b.StartTimer()
			continue
		}
		for _, e := range es {
			g.Ack(e.ID)
		}
		n += len(es)
	}
}

// BenchmarkCollect10 reads a stream 10 entries at a time from the start,
// as XREAD COUNT 10 after the last ID read.
func BenchmarkCollect10(b *testing.B) {
	s := New()
	f := fv("f", "v")
	for i := 0; i < 100000; i++ {
		s.Append(f, ID{}, false, false, int64(1000+i/64), DefaultLimits)
	}
	b.ReportAllocs()
	b.ResetTimer()
	gt := ID{}
	for i := 0; i < b.N; i++ {
		start, _ := gt.Incr()
		es := s.Collect(nil, start, MaxID, false, 10)
		if len(es) == 0 {
			gt = ID{}
			continue
		}
		gt = es[len(es)-1].ID
	}
}
