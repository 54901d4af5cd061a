package node

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestHalfCloseAfterCompleteRequest: a client that sends a whole request
// and shuts down its sending side gets the reply and then its EOF (the
// server closes the connection, as Redis does on read EOF), every round.
func TestHalfCloseAfterCompleteRequest(t *testing.T) {
	ts := startServer(t)
	for i := 0; i < 20; i++ {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
			t.Fatal(err)
		}
		if err := nc.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(nc)
		nc.Close()
		if err != nil || string(got) != "+PONG\r\n" {
			t.Fatalf("round %d: read %q, %v; want +PONG then EOF", i, got, err)
		}
	}
}
