package netio

import (
	"net"
	"testing"
)

// BenchmarkRawRead measures one small write plus the raw read of it on a
// loopback TCP pair, with and without receive timestamps (recvmsg).
func BenchmarkRawRead(b *testing.B) {
	for _, stamps := range []bool{false, true} {
		name := "read"
		if stamps {
			name = "recvmsg-stamps"
		}
		b.Run(name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			cc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer cc.Close()
			sc, err := ln.Accept()
			if err != nil {
				b.Fatal(err)
			}
			defer sc.Close()
			rio := NewStamps(sc, stamps && rxStampsSupported)
			msg := make([]byte, 64)
			buf := make([]byte, 16384)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := cc.Write(msg); err != nil {
					b.Fatal(err)
				}
				n := 0
				for n < len(msg) {
					k, err := rio.Read(buf)
					if err != nil {
						b.Fatal(err)
					}
					n += k
				}
			}
		})
	}
}
