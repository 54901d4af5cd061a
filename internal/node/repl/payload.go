package repl

// The master side's RDB payload of a full resync, in its two forms.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"strconv"
)

// WritePayload sends the snapshot write produces as $<len>\r\n<payload>
// (the disk-based form: the length must be known first, so the payload is
// encoded whole before it is sent).
func WritePayload(w io.Writer, write func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	hdr := "$" + strconv.Itoa(buf.Len()) + "\r\n"
	_, err := w.Write(append([]byte(hdr), buf.Bytes()...))
	return err
}

// WritePayloadEOF streams the snapshot in the diskless form:
// $EOF:<40 random chars>\r\n<payload><the same 40 chars>, in writes of
// 64 kB.
func WritePayloadEOF(w io.Writer, write func(io.Writer) error) error {
	var mark [20]byte
	_, _ = rand.Read(mark[:])
	m := hex.EncodeToString(mark[:])
	if _, err := w.Write([]byte("$EOF:" + m + "\r\n")); err != nil {
		return err
	}
	bw := &chunkWriter{w: w, buf: make([]byte, 0, 64*1024)}
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.flush(); err != nil {
		return err
	}
	_, err := w.Write([]byte(m))
	return err
}

// chunkWriter buffers writes into chunks of a fixed size.
type chunkWriter struct {
	w   io.Writer
	buf []byte
}

func (b *chunkWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := copy(b.buf[len(b.buf):cap(b.buf)], p)
		b.buf = b.buf[:len(b.buf)+k]
		p = p[k:]
		if len(b.buf) == cap(b.buf) {
			if err := b.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (b *chunkWriter) flush() error {
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.w.Write(b.buf)
	b.buf = b.buf[:0]
	return err
}
