package repl

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/resp"
)

func TestParsePsyncReply(t *testing.T) {
	id := strings.Repeat("a", 40)
	for _, tc := range []struct {
		in   string
		want psyncReply
		err  bool
	}{
		{"FULLRESYNC " + id + " 1234", psyncReply{full: true, replid: id, offset: 1234}, false},
		{"CONTINUE " + id, psyncReply{replid: id}, false},
		{"CONTINUE", psyncReply{}, false},
		{"FULLRESYNC " + id, psyncReply{}, true},
		{"NOMASTERLINK", psyncReply{}, true},
	} {
		got, err := parsePsyncReply(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// TestEOFReader reads a diskless payload cut at every size of read: it
// yields exactly the bytes before the mark and leaves what follows it
// (the command stream) unread.
func TestEOFReader(t *testing.T) {
	mark := []byte(strings.Repeat("m", 40))
	payload := bytes.Repeat([]byte("payload-"), 300)
	stream := []byte("*1\r\n$4\r\nPING\r\n")
	for _, chunk := range []int{1, 7, 40, 41, 4096} {
		br := bufio.NewReaderSize(bytes.NewReader(append(append(append([]byte(nil), payload...), mark...), stream...)), 64)
		er := &eofReader{r: br, mark: mark}
		var got []byte
		buf := make([]byte, chunk)
		for {
			n, err := er.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("chunk %d: %v", chunk, err)
			}
		}
		if !bytes.Equal(got, payload) {
			t.Fatalf("chunk %d: read %d bytes, want the %d of the payload", chunk, len(got), len(payload))
		}
		rest, _ := io.ReadAll(br)
		if !bytes.Equal(rest, stream) {
			t.Fatalf("chunk %d: left %q after the mark, want %q", chunk, rest, stream)
		}
	}
}

// TestHandshake runs the replica's handshake against a scripted master on
// loopback: the requests are Redis's, in order, and keep-alive newlines
// before the PSYNC answer are skipped.
func TestHandshake(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	id := strings.Repeat("b", 40)
	got := make(chan []string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		rd := resp.NewReader(c, resp.ReaderOptions{})
		var reqs []string
		for len(reqs) < 7 {
			args, err := rd.Next()
			if err == resp.ErrIncomplete {
				if rd.Fill() != nil {
					break
				}
				continue
			}
			if err != nil {
				break
			}
			var parts []string
			for _, a := range args {
				parts = append(parts, string(a))
			}
			reqs = append(reqs, strings.Join(parts, " "))
			switch {
			case parts[0] == "PING":
				c.Write([]byte("+PONG\r\n"))
			case parts[0] == "PSYNC":
				c.Write([]byte("\n\n+CONTINUE " + id + "\r\n"))
			default:
				c.Write([]byte("+OK\r\n"))
			}
		}
		got <- reqs
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	st := Settings{Timeout: 5 * time.Second, MasterAuth: "pw", MasterUser: "u", ListenPort: "7001", AnnounceIP: "10.0.0.1"}
	reply, err := handshake(nc, bufio.NewReader(nc), st, slog.New(slog.NewTextHandler(io.Discard, nil)),
		psyncRequest{replid: id, offset: 99, continuable: true, failover: true})
	if err != nil {
		t.Fatal(err)
	}
	if reply != (psyncReply{replid: id}) {
		t.Fatalf("reply %+v", reply)
	}
	nc.Close()
	want := []string{"PING", "AUTH u pw", "REPLCONF listening-port 7001", "REPLCONF ip-address 10.0.0.1",
		"REPLCONF capa eof capa psync2", "PSYNC " + id + " 100 FAILOVER"}
	reqs := <-got
	if strings.Join(reqs, "|") != strings.Join(want, "|") {
		t.Fatalf("requests:\n%q\nwant\n%q", reqs, want)
	}
}
