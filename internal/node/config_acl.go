package node

import (
	"strings"
)

// The ACL directives: aclfile, acllog-max-len, acl-pubsub-default, and
// the repeatable "user" lines (Config.users).
func init() {
	defConfig("aclfile", "", nil, true)
	defConfig("acllog-max-len", "128", checkIntRange(0, 1<<63-1), false)
	defConfig("acl-pubsub-default", "resetchannels", checkEnum("allchannels", "resetchannels"), false).apply = applyACLPubsubDefault
}

// addUser records one "user <name> <rules...>" directive.
func (c *Config) addUser(args []string) {
	c.mu.Lock()
	c.users = append(c.users, append([]string(nil), args...))
	c.mu.Unlock()
}

// Users returns the "user" directives, each as its words after "user".
func (c *Config) Users() [][]string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([][]string(nil), c.users...)
}

// setUserLines installs CONFIG REWRITE's renderer of the user lines.
func (c *Config) setUserLines(f func() []string) {
	c.mu.Lock()
	c.userLines = f
	c.mu.Unlock()
}

// applyRequirepass makes requirepass the default user's only password,
// as Redis's ACLUpdateDefaultUserPassword ("" makes it nopass).
func applyRequirepass(s *Server, v string) {
	s.acl.mu.Lock()
	s.acl.reg.SetDefaultPassword(v)
	s.aclChanged()
	s.acl.mu.Unlock()
}

// applyACLPubsubDefault changes what new users and selectors start with
// (existing users keep their channels).
func applyACLPubsubDefault(s *Server, v string) {
	s.acl.mu.Lock()
	s.acl.reg.PubsubDefaultAll = strings.EqualFold(v, "allchannels")
	s.acl.mu.Unlock()
}
