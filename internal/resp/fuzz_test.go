package resp

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzReader feeds arbitrary bytes, in arbitrary chunks, to the request
// reader: it must never panic, never return an empty request, report
// malformed input only as a *ProtocolError (or the query buffer limit),
// and parse the same requests whatever the chunking.
//
//	go test ./internal/resp -run '^$' -fuzz FuzzReader -fuzztime 60s
func FuzzReader(f *testing.F) {
	for _, tc := range readerCases {
		if len(tc.in) < 1024 {
			f.Add([]byte(tc.in), uint8(3))
		}
	}
	f.Add([]byte("*2\r\n$4\r\nECHO\r\n$3\r\nhey\r\nPING\r\n"), uint8(1))
	// A big bulk (its own buffer) between other arguments and requests.
	big := AppendCommand(nil, []byte("SET"), bytes.Repeat([]byte("b"), BigArgLen+5), []byte("EX"))
	f.Add(append(append([]byte("PING\r\n"), big...), "*1\r\n$4\r\nPING\r\n"...), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		opt := ReaderOptions{MaxBulkLen: 1 << 20, QueryBufferLimit: 1 << 20}
		parse := func(rd io.Reader) ([]string, string) {
			r := NewReader(rd, opt)
			var out []string
			for i := 0; i < 10000; i++ {
				args, err := r.ReadCommand()
				if err != nil {
					var pe *ProtocolError
					switch {
					case errors.As(err, &pe):
						return out, pe.Error()
					case err == io.EOF, errors.Is(err, ErrQueryBufferLimit):
						return out, ""
					default:
						t.Fatalf("unexpected error type %T: %v", err, err)
					}
				}
				if len(args) == 0 {
					t.Fatal("empty request returned")
				}
				s := ""
				for _, a := range args {
					s += string(a) + "\x00"
				}
				out = append(out, s)
			}
			return out, ""
		}
		whole, errWhole := parse(&chunkReader{data: data, sizes: []int{len(data) + 1}})
		pieces, errPieces := parse(&chunkReader{data: data, sizes: []int{int(chunk%16) + 1}})
		if errWhole != errPieces || len(whole) != len(pieces) {
			t.Fatalf("chunking changed the result: %q %q vs %q %q", whole, errWhole, pieces, errPieces)
		}
		for i := range whole {
			if whole[i] != pieces[i] {
				t.Fatalf("request %d differs: %q vs %q", i, whole[i], pieces[i])
			}
		}
	})
}
