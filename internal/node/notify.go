package node

import "strconv"

// Keyspace notification classes (notify-keyspace-events).
const (
	notifyKeyspace = 1 << iota // K
	notifyKeyevent             // E
	notifyGeneric              // g
	notifyString               // $
	notifyList                 // l
	notifySet                  // s
	notifyHash                 // h
	notifyZSet                 // z
	notifyExpired              // x
	notifyEvicted              // e
	notifyStream               // t
	notifyKeyMiss              // m
	notifyLoaded               // (module)
	notifyModule               // d
	notifyNew                  // n
	notifyAll      = notifyGeneric | notifyString | notifyList | notifySet | notifyHash | notifyZSet | notifyExpired | notifyEvicted | notifyStream | notifyModule
)

// parseNotifyFlags parses the notify-keyspace-events class string.
func parseNotifyFlags(s string) (int, bool) {
	f := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case 'A':
			f |= notifyAll
		case 'g':
			f |= notifyGeneric
		case '$':
			f |= notifyString
		case 'l':
			f |= notifyList
		case 's':
			f |= notifySet
		case 'h':
			f |= notifyHash
		case 'z':
			f |= notifyZSet
		case 'x':
			f |= notifyExpired
		case 'e':
			f |= notifyEvicted
		case 'K':
			f |= notifyKeyspace
		case 'E':
			f |= notifyKeyevent
		case 't':
			f |= notifyStream
		case 'm':
			f |= notifyKeyMiss
		case 'd':
			f |= notifyModule
		case 'n':
			f |= notifyNew
		default:
			return 0, false
		}
	}
	return f, true
}

// notifyFlags returns the configured classes.
func (s *Server) notifyFlags() int {
	return s.hot().notifyFlags
}

// notifyKeyspaceEvent publishes __keyspace@<db>__:<key> <event> and
// __keyevent@<db>__:<event> <key> when the class is enabled.
func (s *Server) notifyKeyspaceEvent(class int, event, key string, db int) {
	flags := s.notifyFlags()
	if flags&class == 0 || flags&(notifyKeyspace|notifyKeyevent) == 0 || s.watches.forked.Load().muted(db, key) {
		return
	}
	d := strconv.Itoa(db)
	if flags&notifyKeyspace != 0 {
		s.pubsub.publish("__keyspace@"+d+"__:"+key, []byte(event))
	}
	if flags&notifyKeyevent != 0 {
		s.pubsub.publish("__keyevent@"+d+"__:"+event, []byte(key))
	}
}

// notify is the handler-side shortcut for the client's database.
func (c *Client) notify(class int, event, key string) {
	c.srv.notifyKeyspaceEvent(class, event, key, c.db)
}
