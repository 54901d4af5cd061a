package node

import (
	"strconv"

	"github.com/shardis/shardis/internal/node/config"
)

// Keyspace notification classes (notify-keyspace-events), as the
// handlers name them: the config package's, which parses the directive.
const (
	notifyKeyspace = config.NotifyKeyspace
	notifyKeyevent = config.NotifyKeyevent
	notifyGeneric  = config.NotifyGeneric
	notifyString   = config.NotifyString
	notifyList     = config.NotifyList
	notifySet      = config.NotifySet
	notifyHash     = config.NotifyHash
	notifyZSet     = config.NotifyZSet
	notifyExpired  = config.NotifyExpired
	notifyEvicted  = config.NotifyEvicted
	notifyStream   = config.NotifyStream
	notifyKeyMiss  = config.NotifyKeyMiss
	notifyLoaded   = config.NotifyLoaded
	notifyModule   = config.NotifyModule
	notifyNew      = config.NotifyNew
	notifyAll      = config.NotifyAll
)

// notifyFlags returns the configured classes.
func (s *Server) notifyFlags() int {
	return s.hot().notifyFlags
}

// notifyKeyspaceEvent publishes __keyspace@<db>__:<key> <event> and
// __keyevent@<db>__:<event> <key> when the class is enabled.
func (s *Server) notifyKeyspaceEvent(class int, event, key string, db int) {
	flags := s.notifyFlags()
	if flags&class == 0 || flags&(notifyKeyspace|notifyKeyevent) == 0 || s.watches.forked.Load().Muted(db, key) {
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
