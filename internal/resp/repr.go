package resp

// Repr quotes a byte string as Redis's sdscatrepr does: in double
// quotes, with \\ \" \n \r \t \a \b and \xHH escapes, so that SplitArgs
// reads it back as the same bytes.
func Repr(a []byte) string { return string(AppendRepr(nil, a)) }

// AppendRepr appends Repr(s) to b.
func AppendRepr(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, ch := range s {
		switch ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if ch >= 32 && ch < 127 {
				b = append(b, ch)
			} else {
				b = append(b, '\\', 'x', hex[ch>>4], hex[ch&15])
			}
		}
	}
	return append(b, '"')
}
