package config

import "strings"

// BindHost turns one address of the bind directive into a host to listen
// on ("*" is every IPv4 address, "::*" every IPv6 one); a "-" prefix makes
// it optional (skipped when it cannot be bound).
func BindHost(b string) (host string, optional bool) {
	optional = strings.HasPrefix(b, "-")
	b = strings.TrimPrefix(b, "-")
	switch b {
	case "*":
		b = "0.0.0.0"
	case "::*":
		b = "::"
	}
	return b, optional
}
