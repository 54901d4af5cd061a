package value

import (
	"strconv"
	"testing"
)

func TestSetValueEncodings(t *testing.T) {
	s := NewSet()
	for i := 0; i < 512; i++ {
		if !s.Add(strconv.Itoa(i * 3)) {
			t.Fatalf("%d not new", i)
		}
	}
	if s.Add("0") || s.Encoding() != "intset" || s.Len() != 512 {
		t.Fatalf("intset: %s %d", s.Encoding(), s.Len())
	}
	if !s.Has("3") || s.Has("4") || s.Has("03") || s.Has("x") {
		t.Fatal("Has on intset")
	}
	if !s.Remove("3") || s.Remove("3") || s.Remove("x") {
		t.Fatal("Remove on intset")
	}
	s.Add("3")
	s.Add("100000")
	if s.Encoding() != "hashtable" || s.Len() != 513 || !s.Has("3") || !s.Has("100000") {
		t.Fatalf("after 513: %s %d", s.Encoding(), s.Len())
	}
	m := NewSet()
	m.Add("1")
	m.Add("a")
	if m.Encoding() != "hashtable" || !m.Has("1") || !m.Has("a") {
		t.Fatal("non-integer member kept intset")
	}
	for _, v := range []string{"-0", "+1", "01", "9223372036854775808"} {
		if NewSetFor([]byte(v), 1).Encoding() != "hashtable" {
			t.Fatalf("%q treated as integer", v)
		}
	}
	n := 0
	s.ForEach(func(string) bool { n++; return true })
	if n != 513 {
		t.Fatalf("ForEach visited %d", n)
	}
	c := s.Clone().(*Set)
	s.Remove("3")
	if !c.Has("3") {
		t.Fatal("clone shares storage")
	}
}

// TestSetRandomFairness checks that random members of a hashtable set are
// close to uniform (chi-square over 5000 draws from 60 members, 59 degrees
// of freedom: chi-square above 120 has a probability of about 5e-6).
func TestSetRandomFairness(t *testing.T) {
	s := NewSet()
	for i := 0; i < 60; i++ {
		s.Add("m" + strconv.Itoa(i))
	}
	if s.Encoding() != "hashtable" {
		t.Fatal("want a hashtable set")
	}
	const draws = 6000
	hits := map[string]int{}
	for i := 0; i < draws; i++ {
		hits[s.RandomMember()]++
	}
	exp := float64(draws) / 60
	chi := 0.0
	for i := 0; i < 60; i++ {
		d := float64(hits["m"+strconv.Itoa(i)]) - exp
		chi += d * d / exp
	}
	if chi > 120 {
		t.Fatalf("chi-square %.1f over 60 members: random members are biased", chi)
	}
}
