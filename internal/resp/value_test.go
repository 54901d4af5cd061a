package resp

import (
	"bufio"
	"reflect"
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
