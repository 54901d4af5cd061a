package netio

import (
	"bytes"
	"net"
	"testing"
	"time"
)

// A Read into a buffer bigger than maxRead asks the kernel for maxRead
// bytes at most, and such a full read does not count as drained; the
// bytes arrive whole and in order. With stamps and without.
func TestReadIsBoundedByMaxRead(t *testing.T) {
	for _, stamps := range []bool{false, true} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cl, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		sv, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		ln.Close()
		want := make([]byte, 3*maxRead+123)
		for i := range want {
			want[i] = byte(i * 31)
		}
		go func() { _, _ = cl.Write(want) }() // no close: a hang-up wakes the reader with a deadline
		c := NewStamps(sv, stamps).(*Conn)
		watchdog := time.AfterFunc(10*time.Second, func() { sv.Close() }) // a stuck Read fails, not hangs
		buf := make([]byte, 8*maxRead)
		var got []byte
		fullReads := 0
		for range 10000 {
			n, err := c.Read(buf)
			if n > maxRead {
				t.Fatalf("stamps %v: one Read returned %d bytes, more than maxRead %d", stamps, n, maxRead)
			}
			if n == maxRead {
				fullReads++
				if c.Drained() {
					t.Fatalf("stamps %v: a read of maxRead bytes reports the socket drained", stamps)
				}
			}
			got = append(got, buf[:n]...)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) >= len(want) {
				break
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("stamps %v: read %d bytes, want %d equal", stamps, len(got), len(want))
		}
		watchdog.Stop()
		cl.Close()
		sv.Close()
		t.Logf("stamps %v: %d reads of exactly maxRead", stamps, fullReads)
	}
}
