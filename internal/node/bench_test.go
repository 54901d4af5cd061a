package node

import (
	"bufio"
	"fmt"
	"net"
	"testing"
)

// benchPipeline sends b.N requests in pipelines of 16 over one raw
// connection and reads the replies: the server's per-command cost.
func benchPipeline(b *testing.B, mk func(i int) string) {
	ts := startServer(b)
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	br := bufio.NewReaderSize(nc, 64*1024)
	bw := bufio.NewWriterSize(nc, 64*1024)
	b.ResetTimer()
	for i := 0; i < b.N; i += 16 {
		n := min(16, b.N-i)
		for j := 0; j < n; j++ {
			bw.WriteString(mk(i + j))
		}
		bw.Flush()
		for j := 0; j < n; j++ {
			line, err := br.ReadSlice('\n')
			if err != nil {
				b.Fatal(err)
			}
			if line[0] == '$' && line[1] != '-' {
				br.ReadSlice('\n')
			}
		}
	}
}

func BenchmarkSet(b *testing.B) {
	benchPipeline(b, func(i int) string {
		k := fmt.Sprintf("key:%08d", i%100000)
		return "*3\r\n$3\r\nSET\r\n$12\r\n" + k + "\r\n$3\r\nxxx\r\n"
	})
}

func BenchmarkGet(b *testing.B) {
	benchPipeline(b, func(i int) string {
		k := fmt.Sprintf("key:%08d", i%100000)
		return "*2\r\n$3\r\nGET\r\n$12\r\n" + k + "\r\n"
	})
}
