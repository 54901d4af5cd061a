package config

import (
	"errors"
	"strings"
)

// Keyspace notification classes: the bits of notify-keyspace-events, one
// per class character (ParseNotifyFlags).
const (
	NotifyKeyspace = 1 << iota // K
	NotifyKeyevent             // E
	NotifyGeneric              // g
	NotifyString               // $
	NotifyList                 // l
	NotifySet                  // s
	NotifyHash                 // h
	NotifyZSet                 // z
	NotifyExpired              // x
	NotifyEvicted              // e
	NotifyStream               // t
	NotifyKeyMiss              // m
	NotifyLoaded               // (module)
	NotifyModule               // d
	NotifyNew                  // n
	NotifyAll      = NotifyGeneric | NotifyString | NotifyList | NotifySet | NotifyHash | NotifyZSet | NotifyExpired | NotifyEvicted | NotifyStream | NotifyModule
)

// ParseNotifyFlags parses the notify-keyspace-events class string; ok is
// false when a character names no class.
func ParseNotifyFlags(s string) (flags int, ok bool) {
	f := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case 'A':
			f |= NotifyAll
		case 'g':
			f |= NotifyGeneric
		case '$':
			f |= NotifyString
		case 'l':
			f |= NotifyList
		case 's':
			f |= NotifySet
		case 'h':
			f |= NotifyHash
		case 'z':
			f |= NotifyZSet
		case 'x':
			f |= NotifyExpired
		case 'e':
			f |= NotifyEvicted
		case 'K':
			f |= NotifyKeyspace
		case 'E':
			f |= NotifyKeyevent
		case 't':
			f |= NotifyStream
		case 'm':
			f |= NotifyKeyMiss
		case 'd':
			f |= NotifyModule
		case 'n':
			f |= NotifyNew
		default:
			return 0, false
		}
	}
	return f, true
}

// checkNotifyFlags is notify-keyspace-events' check: its classes in
// CONFIG GET's order.
func checkNotifyFlags(v string) (string, error) {
	f, ok := ParseNotifyFlags(v)
	if !ok {
		return "", errors.New("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
	}
	return notifyFlagsString(f), nil
}

// notifyFlagsString renders notify-keyspace-events as CONFIG GET shows it
// (Redis's keyspaceEventsFlagsToString).
func notifyFlagsString(f int) string {
	var b strings.Builder
	if f&NotifyAll == NotifyAll {
		b.WriteByte('A')
	} else {
		for _, x := range []struct {
			f  int
			ch byte
		}{{NotifyGeneric, 'g'}, {NotifyString, '$'}, {NotifyList, 'l'}, {NotifySet, 's'}, {NotifyHash, 'h'}, {NotifyZSet, 'z'}, {NotifyExpired, 'x'}, {NotifyEvicted, 'e'}, {NotifyStream, 't'}, {NotifyModule, 'd'}, {NotifyNew, 'n'}} {
			if f&x.f != 0 {
				b.WriteByte(x.ch)
			}
		}
	}
	if f&NotifyKeyspace != 0 {
		b.WriteByte('K')
	}
	if f&NotifyKeyevent != 0 {
		b.WriteByte('E')
	}
	if f&NotifyKeyMiss != 0 {
		b.WriteByte('m')
	}
	return b.String()
}
