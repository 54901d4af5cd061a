package node

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// TestShutdownClosesListenerFirst checks that once SHUTDOWN NOSAVE's
// connection has ended, a new connection is refused (Redis's "SHUTDOWN
// NOSAVE can kill a timedout script anyway" connects right after).
func TestShutdownClosesListenerFirst(t *testing.T) {
	ts := startServer(t)
	nc, err := net.DialTimeout("tcp", ts.addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write([]byte("SHUTDOWN NOSAVE\r\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(nc).ReadString('\n'); err == nil {
		t.Fatalf("SHUTDOWN replied %q, want the connection closed", line)
	}
	if c2, err := net.DialTimeout("tcp", ts.addr, time.Second); err == nil {
		c2.Close()
		t.Fatal("a connection was accepted after SHUTDOWN's connection ended")
	}
}
