package glob

import (
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, str string
		nocase       bool
		want         bool
	}{
		{"", "", false, true},
		{"", "a", false, false},
		{"*", "", false, true},
		{"*", "anything", false, true},
		{"**", "x", false, true},
		{"h?llo", "hello", false, true},
		{"h?llo", "hllo", false, false},
		{"h*llo", "heeeello", false, true},
		{"h*llo", "hlo", false, false},
		{"h[ae]llo", "hallo", false, true},
		{"h[ae]llo", "hillo", false, false},
		{"h[^e]llo", "hallo", false, true},
		{"h[^e]llo", "hello", false, false},
		{"h[a-b]llo", "hbllo", false, true},
		{"h[b-a]llo", "hallo", false, true}, // reversed range
		{"h[a-b]llo", "hcllo", false, false},
		{"h\\*llo", "h*llo", false, true},
		{"h\\*llo", "hello", false, false},
		{"[\\]]", "]", false, true},
		{"[abc", "a", false, true}, // unterminated class closes at the end
		{"[abc", "ab", false, false},
		{"\\", "\\", false, true},
		{"HELLO", "hello", false, false},
		{"HELLO", "hello", true, true},
		{"h[A-C]llo", "hbllo", true, true},
		{"h[A-C]llo", "hbllo", false, false},
		{"[\\A]", "a", true, false}, // an escaped byte in a class is exact
		{"a*", "a", false, true},
		{"*a", "ba", false, true},
		{"a*b*c", "axxbyyc", false, true},
		{"a*b*c", "axxbyy", false, false},
		{strings.Repeat("a*", 200) + "b", strings.Repeat("a", 300), false, false},
		{strings.Repeat("*", 5000) + "x", "x", false, true},
	}
	for _, tt := range tests {
		if got := Match(tt.pattern, tt.str, tt.nocase); got != tt.want {
			t.Errorf("Match(%q, %q, %v) = %v, want %v", tt.pattern, tt.str, tt.nocase, got, tt.want)
		}
	}
}

// TestMatchDepth: a pattern with more stars (separated by other bytes)
// than the recursion limit matches nothing, as in Redis.
func TestMatchDepth(t *testing.T) {
	p := strings.Repeat("*a", maxDepth+2)
	s := strings.Repeat("a", maxDepth+2)
	if Match(p, s, false) {
		t.Fatalf("a pattern %d stars deep matched", maxDepth+2)
	}
	p = strings.Repeat("*a", 10)
	if !Match(p, s, false) {
		t.Fatalf("a shallow pattern did not match")
	}
}

// FuzzMatch: patterns are client input (KEYS, SCAN MATCH, PSUBSCRIBE);
// Match never panics, a pattern without special bytes matches only
// itself, and "*" around anything matches a string that contains it.
func FuzzMatch(f *testing.F) {
	f.Add("h[^e]l*o\\", "hallo", false)
	f.Add("[a-", "b", true)
	f.Fuzz(func(t *testing.T, pattern, str string, nocase bool) {
		Match(pattern, str, nocase)
		if !strings.ContainsAny(pattern, "*?[\\") && Match(pattern, str, false) != (pattern == str) {
			t.Fatalf("literal %q vs %q", pattern, str)
		}
		if !strings.ContainsAny(str, "*?[\\") && !Match("*"+str+"*", pattern+str+pattern, false) {
			t.Fatalf("*%s* does not match %q", str, pattern+str+pattern)
		}
	})
}
