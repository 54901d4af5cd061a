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

// BenchmarkReaderPipelineMedium reads a pipeline of 16 SET requests with
// 40 KiB values (big bulks) arriving in 64 KiB reads, the caller keeping
// them (keep) or not (recycle, as the node does for a SET).
func BenchmarkReaderPipelineMedium(b *testing.B) {
	val := make([]byte, 40<<10)
	var stream []byte
	for i := 0; i < 16; i++ {
		stream = AppendCommand(stream, []byte("SET"), []byte("key:"+strconv.Itoa(i)), val)
	}
	for _, recycle := range []bool{false, true} {
		b.Run(map[bool]string{false: "keep", true: "recycle"}[recycle], func(b *testing.B) {
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			for b.Loop() {
				r := NewReader(&socketReader{data: stream, max: 64 << 10}, ReaderOptions{})
				for i := 0; i < 16; i++ {
					if _, err := r.ReadCommand(); err != nil {
						b.Fatal(err)
					}
					if recycle {
						recycleReader(r)
					}
				}
			}
		})
	}
}
