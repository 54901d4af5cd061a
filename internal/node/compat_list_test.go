package node

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/resp"
	"github.com/shardis/shardis/internal/testutil"
)

// readRawReply reads one whole RESP2/RESP3 reply and returns its bytes.
func readRawReply(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadBytes('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 {
		return nil, fmt.Errorf("short reply line %q", line)
	}
	out := line
	n, _ := strconv.Atoi(string(line[1 : len(line)-2]))
	items := 0
	switch line[0] {
	case '$', '=', '!':
		if n >= 0 {
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(br, buf); err != nil {
				return nil, err
			}
			out = append(out, buf...)
		}
	case '*', '~', '>':
		items = n
	case '%', '|':
		items = 2 * n
	}
	for i := 0; i < items; i++ {
		sub, err := readRawReply(br)
		if err != nil {
			return nil, err
		}
		out = append(out, sub...)
	}
	return out, nil
}

// compatConn sends commands and reads raw replies.
type compatConn struct {
	nc net.Conn
	br *bufio.Reader
}

func dialCompat(t *testing.T, addr string) *compatConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &compatConn{nc: nc, br: bufio.NewReader(nc)}
}

func (cc *compatConn) do(t *testing.T, args ...string) []byte {
	t.Helper()
	var req []byte
	req = resp.AppendArrayLen(req, len(args))
	for _, a := range args {
		req = resp.AppendBulkString(req, a)
	}
	_ = cc.nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := cc.nc.Write(req); err != nil {
		t.Fatal(err)
	}
	out, err := readRawReply(cc.br)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return out
}

// TestListCompatWithRedis replays list commands against a real
// redis-server and shardnode and compares the replies byte for byte, in
// RESP2 and RESP3.
func TestListCompatWithRedis(t *testing.T) {
	rs := testutil.StartRedis(t)
	ts := startServer(t)
	script := [][]string{
		{"rpush", "l", "a", "b", "c", "1", "2", "3", "c", "c"},
		{"lpush", "l", "z"}, {"lpushx", "nokey", "x"}, {"rpushx", "l", "y"},
		{"llen", "l"}, {"llen", "nokey"},
		{"lrange", "l", "0", "-1"}, {"lrange", "l", "-3", "100"}, {"lrange", "l", "5", "2"}, {"lrange", "nokey", "0", "-1"},
		{"lindex", "l", "0"}, {"lindex", "l", "-1"}, {"lindex", "l", "100"}, {"lindex", "l", "x"}, {"lindex", "nokey", "x"},
		{"lset", "l", "1", "A"}, {"lset", "l", "100", "A"}, {"lset", "nokey", "0", "A"}, {"lset", "l", "x", "A"},
		{"linsert", "l", "before", "c", "pre"}, {"linsert", "l", "after", "nothere", "x"}, {"linsert", "l", "middle", "c", "x"}, {"linsert", "nokey", "after", "c", "x"},
		{"lpos", "l", "c"}, {"lpos", "l", "c", "rank", "-1"}, {"lpos", "l", "c", "count", "0"}, {"lpos", "l", "c", "count", "2", "rank", "2"},
		{"lpos", "l", "c", "maxlen", "3"}, {"lpos", "l", "nothere"}, {"lpos", "l", "c", "rank", "0"}, {"lpos", "l", "c", "count", "-1"},
		{"lpos", "l", "c", "maxlen", "-1"}, {"lpos", "l", "c", "bogus"}, {"lpos", "nokey", "c", "count", "1"},
		{"lrem", "l", "1", "c"}, {"lrem", "l", "-1", "c"}, {"lrem", "l", "0", "nothere"}, {"lrem", "l", "x", "c"},
		{"ltrim", "l", "1", "-2"}, {"lrange", "l", "0", "-1"}, {"ltrim", "nokey", "0", "1"},
		{"lpop", "l"}, {"rpop", "l"}, {"lpop", "l", "2"}, {"rpop", "l", "0"}, {"lpop", "l", "-1"}, {"lpop", "l", "x"}, {"lpop", "nokey"}, {"lpop", "nokey", "3"}, {"lpop", "l", "1", "2"},
		{"rpoplpush", "l", "m"}, {"lmove", "l", "m", "left", "right"}, {"lmove", "l", "m", "up", "right"}, {"rpoplpush", "nokey", "m"},
		{"lmpop", "2", "nokey", "l", "left", "count", "2"}, {"lmpop", "1", "nokey", "right"}, {"lmpop", "0", "l", "left"}, {"lmpop", "3", "l", "left"},
		{"lmpop", "1", "l", "left", "count", "0"}, {"lmpop", "1", "l", "sideways"},
		{"blpop", "nokey", "0.01"}, {"brpop", "m", "0"}, {"blpop", "m", "-1"}, {"blpop", "m", "abc"},
		{"blmove", "nokey", "m", "left", "left", "0.01"}, {"brpoplpush", "m", "m", "0"}, {"blmpop", "0.01", "1", "nokey", "left"},
		{"blmpop", "0", "2", "nokey", "m", "right", "count", "5"},
		{"set", "s", "x"}, {"lpush", "s", "a"}, {"lrange", "s", "0", "1"}, {"blpop", "s", "0"}, {"rpoplpush", "m", "s"},
		{"lrange", "m", "0", "-1"}, {"del", "l", "m", "s"},
	}
	for _, proto := range []string{"2", "3"} {
		a, b := dialCompat(t, rs.Addr), dialCompat(t, ts.addr)
		a.do(t, "hello", proto)
		b.do(t, "hello", proto)
		for _, cmd := range script {
			ra, rb := a.do(t, cmd...), b.do(t, cmd...)
			if !bytes.Equal(ra, rb) {
				t.Fatalf("RESP%s %q:\nredis:     %q\nshardnode: %q", proto, cmd, ra, rb)
			}
		}
	}
}
