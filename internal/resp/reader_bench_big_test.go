package resp

import (
	"io"
	"strconv"
	"testing"
)

// socketReader returns at most max bytes per Read, as a socket returns
// what has arrived.
type socketReader struct {
	data []byte
	max  int
}

func (s *socketReader) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(s.data), s.max)
	copy(p, s.data[:n])
	s.data = s.data[n:]
	return n, nil
}

// BenchmarkReaderBigBulk reads a RESTORE with a 50 MB payload arriving in
// 64 KiB reads.
func BenchmarkReaderBigBulk(b *testing.B) {
	const size = 50 << 20
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	stream := []byte("*4\r\n$7\r\nRESTORE\r\n$1\r\nk\r\n$1\r\n0\r\n$" + strconv.Itoa(size) + "\r\n")
	stream = append(stream, payload...)
	stream = append(stream, "\r\n"...)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(&socketReader{data: stream, max: 64 << 10}, ReaderOptions{})
		args, err := r.ReadCommand()
		if err != nil || len(args[3]) != size {
			b.Fatal(err)
		}
	}
}
