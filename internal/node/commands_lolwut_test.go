package node

import (
	"bytes"
	"net"
	"testing"
)

// LOLWUT answers as redis-server 7.0.15: the version line by default, the
// art of version 5 and 6 on request (their random parts aside: the first
// braille line of Schotter and the footers are fixed), and the integer
// errors.
func TestLolwut(t *testing.T) {
	node, red := bothServers(t)
	local := net.ParseIP("127.0.0.1")
	for _, req := range [][]string{
		{"LOLWUT"}, {"LOLWUT", "VERSION", "7"}, {"LOLWUT", "VERSION", "x"}, {"LOLWUT", "VERSION", "5", "x"},
		{"LOLWUT", "VERSION", "6", "1", "x"}, {"LOLWUT", "VERSION", "9", "x"},
	} {
		n := exchange(t, local, node, cmdReq(req...))[0]
		r := exchange(t, local, red, cmdReq(req...))[0]
		if !bytes.Equal(n, r) {
			t.Errorf("%v: shardnode %q, redis %q", req, n, r)
		}
	}
	firstLine := func(b []byte) []byte {
		i := bytes.IndexByte(b, '\n') // after the bulk header
		j := bytes.IndexByte(b[i+1:], '\n')
		return b[:i+1+j]
	}
	footer := func(b []byte) []byte { return b[bytes.LastIndex(b, []byte("\n"))-60:] }
	for _, req := range [][]string{{"LOLWUT", "VERSION", "5"}, {"LOLWUT", "VERSION", "5", "30", "4", "3"}} {
		n := exchange(t, local, node, cmdReq(req...))[0]
		r := exchange(t, local, red, cmdReq(req...))[0]
		if !bytes.Equal(firstLine(n), firstLine(r)) || !bytes.Equal(footer(n), footer(r)) || len(n) != len(r) {
			t.Errorf("%v: shardnode %q, redis %q", req, n, r)
		}
	}
	n := exchange(t, local, node, cmdReq("LOLWUT", "VERSION", "6", "5", "3"))[0]
	r := exchange(t, local, red, cmdReq("LOLWUT", "VERSION", "6", "5", "3"))[0]
	// The escapes of the four grays differ in length: compare the lines.
	if bytes.Count(n, []byte("\n")) != bytes.Count(r, []byte("\n")) || bytes.Count(n, []byte("\x1b[0m")) != bytes.Count(r, []byte("\x1b[0m")) || !bytes.Equal(footer(n), footer(r)) {
		t.Errorf("LOLWUT VERSION 6: shardnode %q, redis %q", n, r)
	}
}
