package admin

import (
	"strings"

	"github.com/shardis/shardis/internal/resp"
)

// AppendDebugProtocol appends DEBUG PROTOCOL's answer for kind (string,
// integer, double, bignum, null, array, set, map, attrib, push, verbatim,
// true, false; any case) in protocol proto: one sample of that reply
// type, as Redis 7.0's debug.c (its tests check RESP2/RESP3 replies and
// their conversion inside scripts with it). An attribute or a push comes
// with the reply that follows it. For an unknown kind, or a push in RESP2,
// it returns b and the error text to reply instead.
func AppendDebugProtocol(b []byte, proto int, kind string) ([]byte, string) {
	switch strings.ToLower(kind) {
	case "string":
		b = resp.AppendBulkString(b, "Hello World")
	case "integer":
		b = resp.AppendInt(b, 12345)
	case "double":
		b = resp.AppendDouble(b, proto, 3.141)
	case "bignum":
		b = resp.AppendBigNumber(b, proto, "1234567999999999999999999999999999999")
	case "null":
		b = resp.AppendNull(b, proto)
	case "array", "set":
		if strings.EqualFold(kind, "set") {
			b = resp.AppendSetLen(b, proto, 3)
		} else {
			b = resp.AppendArrayLen(b, 3)
		}
		for j := int64(0); j < 3; j++ {
			b = resp.AppendInt(b, j)
		}
	case "map":
		b = resp.AppendMapLen(b, proto, 3)
		for j := int64(0); j < 3; j++ {
			b = resp.AppendInt(b, j)
			b = resp.AppendBool(b, proto, j == 1)
		}
	case "attrib":
		if proto >= resp.RESP3 {
			b = resp.AppendAttributeLen(b, 1)
			b = resp.AppendBulkString(b, "key-popularity")
			b = resp.AppendArrayLen(b, 2)
			b = resp.AppendBulkString(b, "key:123")
			b = resp.AppendInt(b, 90)
		}
		b = resp.AppendBulkString(b, "Some real reply following the attribute")
	case "push":
		if proto < resp.RESP3 {
			return b, "ERR RESP2 is not supported by this command"
		}
		b = resp.AppendPushLen(b, proto, 2)
		b = resp.AppendBulkString(b, "server-cpu-usage")
		b = resp.AppendInt(b, 42)
		b = resp.AppendBulkString(b, "Some real reply following the push reply")
	case "true":
		b = resp.AppendBool(b, proto, true)
	case "false":
		b = resp.AppendBool(b, proto, false)
	case "verbatim":
		b = resp.AppendVerbatim(b, proto, "txt", "This is a verbatim\nstring")
	default:
		return b, "ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false"
	}
	return b, ""
}
