package resp

import (
	"strconv"
	"strings"
)

// Repr quotes a byte string as Redis's sdscatrepr does: in double
// quotes, with \\ \" \n \r \t \a \b and \xHH escapes, so that SplitArgs
// reads it back as the same bytes.
func Repr(a []byte) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, ch := range a {
		switch ch {
		case '\\', '"':
			b.WriteByte('\\')
			b.WriteByte(ch)
		case '\n':
			b.WriteString("\\n")
		case '\r':
			b.WriteString("\\r")
		case '\t':
			b.WriteString("\\t")
		case '\a':
			b.WriteString("\\a")
		case '\b':
			b.WriteString("\\b")
		default:
			if ch >= 32 && ch < 127 {
				b.WriteByte(ch)
			} else {
				b.WriteString("\\x")
				b.WriteString(strconv.FormatInt(int64(ch)>>4, 16))
				b.WriteString(strconv.FormatInt(int64(ch)&15, 16))
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
