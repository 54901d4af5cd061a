package resp

import (
	"io"
	"strings"
	"testing"
)

// TestInlineNULNeverEnds: an inline request with a NUL byte before its
// newline does not end there (Redis's strchr stops at the NUL), so the
// reader waits for more and refuses it past InlineMaxSize; a NUL after a
// complete request leaves that request intact.
func TestInlineNULNeverEnds(t *testing.T) {
	cases := []struct {
		in      string
		want    string // requests joined by ','
		wantErr string // "" for a clean end of input
	}{
		{"PI\x00NG\r\nPING\r\n", "", ""},
		{"PING\r\nA\x00B\r\n", "PING", ""},
		{"\x00\n" + strings.Repeat("x", InlineMaxSize), "", "ERR Protocol error: too big inline request"},
		{"GET a\r\n", "GET|a", ""},
	}
	for _, tc := range cases {
		got, err := readAll(t, strings.NewReader(tc.in), ReaderOptions{})
		if strings.Join(got, ",") != tc.want {
			t.Errorf("%.40q: requests %q, want %q", tc.in, got, tc.want)
		}
		if tc.wantErr == "" {
			if err != io.EOF && err != io.ErrUnexpectedEOF {
				t.Errorf("%.40q: end %v, want end of input", tc.in, err)
			}
		} else if protoErr(err) != tc.wantErr {
			t.Errorf("%.40q: error %v, want %q", tc.in, err, tc.wantErr)
		}
	}
}
