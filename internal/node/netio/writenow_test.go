package netio

import (
	"io"
	"net"
	"testing"
	"time"
)

func TestWriteConnNow(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cli, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	msg := []byte("*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$2\r\n42\r\n")
	if n := WriteConnNow(cli, msg); n != len(msg) {
		t.Fatalf("wrote %d of %d bytes to an empty socket", n, len(msg))
	}
	got := make([]byte, len(msg))
	_ = srv.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(srv, got); err != nil || string(got) != string(msg) {
		t.Fatalf("peer read %q, %v", got, err)
	}
	// A full socket takes part or nothing, and says how much.
	big := make([]byte, 64<<20)
	n := WriteConnNow(cli, big)
	if n <= 0 || n >= len(big) {
		t.Fatalf("a 64 MB write to an unread socket took %d bytes at once", n)
	}

	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if n := WriteConnNow(a, msg); n != 0 {
		t.Fatalf("a pipe (no socket) took %d bytes", n)
	}
}
