package resp

import (
	"bufio"
	"bytes"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestReadValue(t *testing.T) {
	tests := []struct {
		in   string
		want Value
	}{
		{"+PONG\r\n", Value{Type: '+', Str: "PONG"}},
		{"-ERR x\r\n", Value{Type: '-', Str: "ERR x"}},
		{":-5\r\n", Value{Type: ':', Int: -5}},
		{"$3\r\nfoo\r\n", Value{Type: '$', Str: "foo"}},
		{"$-1\r\n", Value{Type: '$', Null: true}},
		{"_\r\n", Value{Type: '_', Null: true}},
		{"*2\r\n:1\r\n$1\r\n*\r\n", Value{Type: '*', Elems: []Value{{Type: ':', Int: 1}, {Type: '$', Str: "*"}}}},
		{"%1\r\n+a\r\n:2\r\n", Value{Type: '%', Elems: []Value{{Type: '+', Str: "a"}, {Type: ':', Int: 2}}}},
		{">2\r\n$1\r\na\r\n$1\r\nb\r\n", Value{Type: '>', Elems: []Value{{Type: '$', Str: "a"}, {Type: '$', Str: "b"}}}},
	}
	for _, tt := range tests {
		got, err := ReadValue(bufio.NewReader(strings.NewReader(tt.in)))
		if err != nil {
			t.Fatalf("%q: %v", tt.in, err)
		}
		if got.Elems != nil && len(got.Elems) == 0 {
			got.Elems = nil
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %+v, want %+v", tt.in, got, tt.want)
		}
	}
	for _, bad := range []string{"", "?x\r\n", "$5\r\nab\r\n", ":x\r\n", "+no-crlf\n", "$3\r\nfooXY", "*-2\r\n"} {
		if _, err := ReadValue(bufio.NewReader(strings.NewReader(bad))); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestReadValueLimited(t *testing.T) {
	lim := ValueLimits{MaxBulkLen: 4, MaxElems: 2, MaxDepth: 2}
	ok := []string{"$4\r\nabcd\r\n", "*2\r\n:1\r\n:2\r\n", "%2\r\n+a\r\n:1\r\n+b\r\n:2\r\n", "*1\r\n*1\r\n:1\r\n", "$-1\r\n"}
	for _, in := range ok {
		if _, err := ReadValueLimited(bufio.NewReader(strings.NewReader(in)), lim); err != nil {
			t.Errorf("%q refused: %v", in, err)
		}
	}
	bad := []string{
		"$5\r\nabcde\r\n",                 // bulk over MaxBulkLen
		"=5\r\ntxt:a\r\n",                 // verbatim over MaxBulkLen
		"*3\r\n:1\r\n:2\r\n:3\r\n",        // array over MaxElems
		"%3\r\n",                          // map over MaxElems (entries counted)
		">3\r\n",                          // push over MaxElems
		"*1\r\n*1\r\n*1\r\n:1\r\n",        // nested deeper than MaxDepth
		"*1\r\n$9\r\n123456789\r\n",       // limit applies inside aggregates
		"*2\r\n$4\r\nabcd\r\n$5\r\nx\r\n", // second element over the limit
	}
	for _, in := range bad {
		if v, err := ReadValueLimited(bufio.NewReader(strings.NewReader(in)), lim); err == nil {
			t.Errorf("%q accepted: %+v", in, v)
		}
	}
	// Zero limits are the defaults of ReadValue.
	if _, err := ReadValueLimited(bufio.NewReader(strings.NewReader("$5\r\nabcde\r\n")), ValueLimits{}); err != nil {
		t.Errorf("default limits refused a short bulk: %v", err)
	}
}

// TestReadValueHugeAggregateHeader checks that a header declaring millions
// of elements, followed by nothing, allocates for what arrives, not for
// what it declares.
func TestReadValueHugeAggregateHeader(t *testing.T) {
	in := "*16000000\r\n:1\r\n"
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := ReadValue(bufio.NewReader(strings.NewReader(in)))
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("truncated aggregate accepted")
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 1<<20 {
		t.Fatalf("a %d-byte reply allocated %d bytes", len(in), grown)
	}
}

// FuzzReadValue: any input parses or fails with an error within the
// limits; it never panics.
//
//	go test ./internal/resp -run '^$' -fuzz FuzzReadValue -fuzztime 30s
func FuzzReadValue(f *testing.F) {
	for _, s := range []string{"+PONG\r\n", "*2\r\n:1\r\n$1\r\n*\r\n", "%1\r\n+a\r\n:2\r\n", "|1\r\n+a\r\n+b\r\n:3\r\n", "*1\r\n*1\r\n*1\r\n_\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := ValueLimits{MaxBulkLen: 1 << 16, MaxElems: 1 << 10, MaxDepth: 8}
		br := bufio.NewReader(bytes.NewReader(data))
		for i := 0; i < 100; i++ {
			if _, err := ReadValueLimited(br, lim); err != nil {
				return
			}
		}
	})
}
