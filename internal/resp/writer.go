// Package resp implements the Redis serialization protocol (RESP2 and RESP3):
// a bounded request reader for servers and append-style reply encoders.
//
// Encoders are pure functions of the form AppendX(b []byte, ...) []byte so a
// connection can collect every reply of a pipeline batch in one buffer and
// write it with a single syscall.
package resp

import (
	"math"
	"strconv"
)

// Protocol versions negotiated with HELLO.
const (
	RESP2 = 2
	RESP3 = 3
)

// AppendSimple appends a simple string reply (+s).
func AppendSimple(b []byte, s string) []byte {
	b = append(b, '+')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendOK appends +OK.
func AppendOK(b []byte) []byte { return append(b, "+OK\r\n"...) }

// AppendError appends an error reply. s must contain the error code prefix
// (for example "ERR syntax error" or "WRONGTYPE ..."); line breaks are
// replaced by spaces as Redis does.
func AppendError(b []byte, s string) []byte {
	b = append(b, '-')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return append(b, '\r', '\n')
}

// AppendInt appends an integer reply (:n).
func AppendInt(b []byte, n int64) []byte {
	b = append(b, ':')
	b = strconv.AppendInt(b, n, 10)
	return append(b, '\r', '\n')
}

// AppendBulk appends a bulk string reply ($len\r\nv\r\n).
func AppendBulk(b []byte, v []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(v)), 10)
	b = append(b, '\r', '\n')
	b = append(b, v...)
	return append(b, '\r', '\n')
}

// AppendBulkString appends a bulk string reply from a string.
func AppendBulkString(b []byte, v string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(v)), 10)
	b = append(b, '\r', '\n')
	b = append(b, v...)
	return append(b, '\r', '\n')
}

// AppendBulkInt appends an integer formatted as a bulk string.
func AppendBulkInt(b []byte, n int64) []byte {
	var tmp [24]byte
	return AppendBulk(b, strconv.AppendInt(tmp[:0], n, 10))
}

// AppendVerbatim appends a RESP3 verbatim string (=len\r\nfmt:text) or, for
// RESP2, a bulk string with the text only.
func AppendVerbatim(b []byte, proto int, format, text string) []byte {
	if proto < RESP3 {
		return AppendBulkString(b, text)
	}
	b = append(b, '=')
	b = strconv.AppendInt(b, int64(len(text)+4), 10)
	b = append(b, '\r', '\n')
	b = append(b, format...)
	b = append(b, ':')
	b = append(b, text...)
	return append(b, '\r', '\n')
}

// AppendNull appends the null reply: $-1 in RESP2, _ in RESP3.
func AppendNull(b []byte, proto int) []byte {
	if proto >= RESP3 {
		return append(b, "_\r\n"...)
	}
	return append(b, "$-1\r\n"...)
}

// AppendNullArray appends a null array: *-1 in RESP2, _ in RESP3.
func AppendNullArray(b []byte, proto int) []byte {
	if proto >= RESP3 {
		return append(b, "_\r\n"...)
	}
	return append(b, "*-1\r\n"...)
}

// AppendArrayLen appends an array header (*n).
func AppendArrayLen(b []byte, n int) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// AppendSetLen appends a set header: ~n in RESP3, *n in RESP2.
func AppendSetLen(b []byte, proto, n int) []byte {
	if proto >= RESP3 {
		b = append(b, '~')
		b = strconv.AppendInt(b, int64(n), 10)
		return append(b, '\r', '\n')
	}
	return AppendArrayLen(b, n)
}

// AppendMapLen appends a map header: %n in RESP3, *2n in RESP2.
func AppendMapLen(b []byte, proto, n int) []byte {
	if proto >= RESP3 {
		b = append(b, '%')
		b = strconv.AppendInt(b, int64(n), 10)
		return append(b, '\r', '\n')
	}
	return AppendArrayLen(b, 2*n)
}

// AppendPushLen appends a push header: >n in RESP3, *n in RESP2.
func AppendPushLen(b []byte, proto, n int) []byte {
	if proto >= RESP3 {
		b = append(b, '>')
		b = strconv.AppendInt(b, int64(n), 10)
		return append(b, '\r', '\n')
	}
	return AppendArrayLen(b, n)
}

// AppendAttributeLen appends a RESP3 attribute header (|n: n key/value
// pairs that annotate the reply that follows them). RESP2 has no
// attributes: nothing is appended, and the caller must then skip the
// pairs too.
func AppendAttributeLen(b []byte, n int) []byte {
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// AppendBool appends a boolean: #t/#f in RESP3, :1/:0 in RESP2.
func AppendBool(b []byte, proto int, v bool) []byte {
	if proto >= RESP3 {
		if v {
			return append(b, "#t\r\n"...)
		}
		return append(b, "#f\r\n"...)
	}
	if v {
		return append(b, ":1\r\n"...)
	}
	return append(b, ":0\r\n"...)
}

// AppendDouble appends a double: ,v in RESP3, a bulk string in RESP2. The
// text follows Redis's %.17g formatting with inf/-inf/nan spelled as Redis
// does.
func AppendDouble(b []byte, proto int, f float64) []byte {
	if proto >= RESP3 {
		b = append(b, ',')
		switch {
		case math.IsInf(f, 1):
			b = append(b, "inf"...)
		case math.IsInf(f, -1):
			b = append(b, "-inf"...)
		case math.IsNaN(f):
			b = append(b, "nan"...)
		default:
			b = AppendFloatText(b, f)
		}
		return append(b, '\r', '\n')
	}
	var tmp [32]byte
	return AppendBulk(b, FormatDouble(tmp[:0], f))
}

// FormatDouble formats f the way Redis replies with scores (%.17g, with
// "inf", "-inf" and "nan").
func FormatDouble(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case math.IsNaN(f):
		return append(b, "nan"...)
	}
	return AppendFloatText(b, f)
}

// AppendFloatText appends f as C's printf("%.17g") does, which is how
// Redis 7.0 replies with scores.
func AppendFloatText(b []byte, f float64) []byte {
	return strconv.AppendFloat(b, f, 'g', 17, 64)
}

// AppendFloatShortest appends the shortest text that reads back as f, the
// form INCRBYFLOAT and HINCRBYFLOAT store (Redis prints a long double with
// %.17Lg and strips trailing zeros, which agrees for the values a double can
// hold).
func AppendFloatShortest(b []byte, f float64) []byte {
	if f == math.Trunc(f) && math.Abs(f) < 1e17 {
		return strconv.AppendInt(b, int64(f), 10)
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

// AppendBigNumber appends a RESP3 big number (or a bulk string in RESP2).
func AppendBigNumber(b []byte, proto int, s string) []byte {
	if proto >= RESP3 {
		b = append(b, '(')
		b = append(b, s...)
		return append(b, '\r', '\n')
	}
	return AppendBulkString(b, s)
}

// AppendCommand encodes args as a RESP multibulk request, as clients and
// replication streams send commands.
func AppendCommand(b []byte, args ...[]byte) []byte {
	b = AppendArrayLen(b, len(args))
	for _, a := range args {
		b = AppendBulk(b, a)
	}
	return b
}

// AppendCommandStrings is AppendCommand for string arguments.
func AppendCommandStrings(b []byte, args ...string) []byte {
	b = AppendArrayLen(b, len(args))
	for _, a := range args {
		b = AppendBulkString(b, a)
	}
	return b
}
