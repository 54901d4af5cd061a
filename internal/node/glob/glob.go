// Package glob is Redis's glob-style pattern matching (stringmatchlen in
// util.c), the one implementation the node uses for KEYS, SCAN MATCH,
// PUBSUB patterns, CONFIG GET, COMMAND LIST FILTERBY PATTERN and ACL
// channel rules.
//
// Syntax: * matches any run of bytes, ? any one byte, [abc] one of a set,
// [^a-z] one byte outside a range, \x the byte x itself. An unterminated
// class is closed by the end of the pattern. Matching works on bytes, not
// runes, and never recurses more than maxDepth stars deep.
package glob

// maxDepth bounds the recursion on '*' as Redis does: a pattern nested
// deeper matches nothing.
const maxDepth = 1000

// Match reports whether str matches pattern; nocase folds ASCII letters.
func Match(pattern, str string, nocase bool) bool {
	var skipLonger bool
	return match(pattern, str, nocase, 0, &skipLonger)
}

func lower(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// match is one level of the recursion. skipLonger is Redis's
// skipLongerMatches: once the rest of a pattern after a '*' matched
// nowhere in the string, earlier stars need not try longer matches (keeps
// "a*a*a*...b" linear instead of exponential).
func match(p, s string, nocase bool, depth int, skipLonger *bool) bool {
	if depth > maxDepth {
		return false
	}
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if match(p[1:], s[i:], nocase, depth+1, skipLonger) {
					return true
				}
				if *skipLonger {
					return false
				}
			}
			*skipLonger = true
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			s = s[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			var ok bool
			p, ok = matchClass(p[1:], s[0], nocase)
			if !ok {
				return false
			}
			s = s[1:]
			if len(p) == 0 {
				// Unterminated class: Redis treats the end as closing it.
				return len(s) == 0
			}
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || !sameByte(p[0], s[0], nocase) {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
		if len(s) == 0 {
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			break
		}
	}
	return len(p) == 0 && len(s) == 0
}

func sameByte(a, b byte, nocase bool) bool {
	if nocase {
		return lower(a) == lower(b)
	}
	return a == b
}

// matchClass matches c against the class that starts at p (just after
// '['). It returns the pattern from the class's closing ']' on (empty when
// the class is unterminated) and whether c is in the class.
func matchClass(p string, c byte, nocase bool) (string, bool) {
	not := len(p) > 0 && p[0] == '^'
	if not {
		p = p[1:]
	}
	in := false
	for len(p) > 0 && p[0] != ']' {
		switch {
		case p[0] == '\\' && len(p) >= 2:
			// An escaped byte is compared exactly, as Redis does.
			p = p[1:]
			if p[0] == c {
				in = true
			}
		case len(p) >= 3 && p[1] == '-':
			start, end, x := p[0], p[2], c
			if start > end {
				start, end = end, start
			}
			if nocase {
				start, end, x = lower(start), lower(end), lower(x)
			}
			p = p[2:]
			if x >= start && x <= end {
				in = true
			}
		case sameByte(p[0], c, nocase):
			in = true
		}
		p = p[1:]
	}
	return p, in != not
}
