package migrate

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/resp"
)

func args(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		if f == `""` {
			f = ""
		}
		out = append(out, []byte(f))
	}
	return out
}

func TestParseAndKeys(t *testing.T) {
	o, err := Parse(args(`MIGRATE h 7 "" 2 0 COPY AUTH2 u p KEYS a b`))
	if err != nil || o.Addr != "h:7" || o.DB != 2 || o.Timeout != time.Second || !o.Copy || len(o.Auth) != 2 || len(o.Keys) != 2 {
		t.Fatalf("%+v, %v", o, err)
	}
	for _, tc := range []struct {
		cmd string
		err error
	}{
		{`MIGRATE h 7 k 0 10 KEYS a`, ErrKeysWithKey}, {`MIGRATE h 7 k 0 10 AUTH`, ErrSyntax},
		{`MIGRATE h 7 k 0 x`, ErrNotInt}, {`MIGRATE h 7 k x 10`, ErrNotInt}, {`MIGRATE h 7 k 0 10 FOO`, ErrSyntax},
	} {
		if _, err := Parse(args(tc.cmd)); err != tc.err {
			t.Errorf("%s: %v, want %v", tc.cmd, err, tc.err)
		}
	}
	for _, tc := range []struct {
		cmd  string
		want string
	}{
		{`MIGRATE h 7 k 0 10`, "[3]"}, {`MIGRATE h 7 "" 0 10 AUTH keys KEYS a b`, "[9 10]"}, {`MIGRATE h 7 "" 0 10`, "[]"},
	} {
		if got := fmt.Sprint(Keys(args(tc.cmd))); got != tc.want {
			t.Errorf("Keys(%s) = %s, want %s", tc.cmd, got, tc.want)
		}
	}
}

// Send pipelines SELECT and the RESTOREs, marks the acknowledged keys and
// reports the target's first error; the connection goes back to the cache.
func TestSend(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []string, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReader(nc)
		var cmds []string
		for i := 0; i < 3; i++ {
			v, err := resp.ReadValue(br)
			if err != nil {
				return
			}
			cmds = append(cmds, strings.ToUpper(v.Elems[0].Str)+" "+v.Elems[1].Str)
		}
		_, _ = nc.Write([]byte("+OK\r\n+OK\r\n-BUSYKEY Target key name already exists.\r\n"))
		got <- cmds
	}()
	o := &Options{Addr: ln.Addr().String(), DB: 3, Timeout: 2 * time.Second}
	items := []Item{{Key: "a", Payload: []byte("x")}, {Key: "b", TTL: 5, Payload: []byte("y")}}
	res := Send(o, items, false)
	if res.IOErr != "" || res.TargetErr != "BUSYKEY Target key name already exists." || !items[0].Acked || items[1].Acked {
		t.Fatalf("%+v %+v", res, items)
	}
	if cmds := <-got; strings.Join(cmds, ",") != "SELECT 3,RESTORE a,RESTORE b" {
		t.Errorf("target got %v", cmds)
	}
	cache.Lock()
	_, cached := cache.conns[o.Addr]
	cache.Unlock()
	if !cached {
		t.Error("connection not cached after the exchange")
	}
	if res := Send(&Options{Addr: "127.0.0.1:1", Timeout: 200 * time.Millisecond}, items, false); res.IOErr != "IOERR error or timeout connecting to the client" {
		t.Errorf("unreachable target: %+v", res)
	}
}

// A request's segments join to the RESP of its commands, and a payload of
// chunk bytes or more is a segment of its own (not copied).
func TestRequestSegments(t *testing.T) {
	big := make([]byte, chunk+7)
	for i := range big {
		big[i] = byte(i)
	}
	var r request
	r.command([]byte("SELECT"), []byte("2"))
	r.command([]byte("RESTORE"), []byte("k"), []byte("0"), big, []byte("REPLACE"))
	r.command([]byte("RESTORE"), []byte("s"), []byte("0"), []byte("small"))
	segs := r.done()
	want := "*2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n" +
		"*5\r\n$7\r\nRESTORE\r\n$1\r\nk\r\n$1\r\n0\r\n$" + strconv.Itoa(len(big)) + "\r\n" + string(big) + "\r\n$7\r\nREPLACE\r\n" +
		"*4\r\n$7\r\nRESTORE\r\n$1\r\ns\r\n$1\r\n0\r\n$5\r\nsmall\r\n"
	if got := string(bytes.Join(segs, nil)); got != want {
		t.Fatalf("joined segments differ from the commands' RESP (%d bytes, want %d)", len(got), len(want))
	}
	shared := false
	for _, s := range segs {
		if len(s) > 0 && &s[0] == &big[0] {
			shared = true
		}
	}
	if len(segs) != 3 || !shared {
		t.Fatalf("%d segments, payload referenced: %v; want 3 and true", len(segs), shared)
	}
}

// request.restore renders exactly what command renders for the same
// RESTORE, for every TTL width and sign, with and without REPLACE, small
// payloads copied and big ones referenced.
func TestRequestRestoreMatchesCommand(t *testing.T) {
	big := make([]byte, chunk+3)
	for i := range big {
		big[i] = byte(i * 7)
	}
	name := []byte("RESTORE-ASKING")
	for _, ttl := range []int64{0, 1, 9, 10, 99, 100, 123456789, -1, -10, 1<<63 - 1, -1 << 63} {
		for _, replace := range []bool{false, true} {
			for _, payload := range [][]byte{[]byte("p"), big, {}} {
				it := Item{Key: "key:" + strconv.FormatInt(ttl, 10), TTL: ttl, Payload: payload}
				var a, b request
				args := [][]byte{name, []byte(it.Key), []byte(strconv.FormatInt(ttl, 10)), payload}
				if replace {
					args = append(args, []byte("REPLACE"))
				}
				a.command(args...)
				b.restore(name, it, replace)
				ga, gb := bytes.Join(a.done(), nil), bytes.Join(b.done(), nil)
				if !bytes.Equal(ga, gb) {
					t.Fatalf("ttl %d replace %v payload %d bytes: restore renders %q, command %q", ttl, replace, len(payload), gb[:min(len(gb), 80)], ga[:min(len(ga), 80)])
				}
				if len(a.segs) != len(b.segs) {
					t.Fatalf("ttl %d: %d segments, command %d", ttl, len(b.segs), len(a.segs))
				}
			}
		}
	}
	// A payload in parts renders as the joined payload, a big body as a
	// segment of its own.
	for _, body := range [][]byte{big, []byte("mid")} {
		it := Item{Key: "k", TTL: 5, Payload: []byte("HEAD"), Body: body, Tail: []byte("TAIL")}
		var a, b request
		a.command(name, []byte("k"), []byte("5"), bytes.Join([][]byte{it.Payload, body, it.Tail}, nil))
		b.restore(name, it, false)
		if ga, gb := bytes.Join(a.done(), nil), bytes.Join(b.done(), nil); !bytes.Equal(ga, gb) {
			t.Fatalf("payload in parts (body %d bytes) renders differently", len(body))
		}
		shared := false
		for _, sg := range b.segs {
			if len(sg) > 0 && &sg[0] == &big[0] {
				shared = true
			}
		}
		if shared != (len(body) >= chunk) {
			t.Fatalf("body of %d bytes referenced: %v", len(body), shared)
		}
	}
	if digits(0) != 1 || digits(-1<<63) != 20 || digits(1<<63-1) != 19 {
		t.Fatal("digits")
	}
}
