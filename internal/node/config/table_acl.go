package config

// The ACL directives: aclfile, acllog-max-len, acl-pubsub-default, and
// the repeatable "user" lines (Config.users).
func init() {
	defConfig("aclfile", "", nil, true)
	defConfig("acllog-max-len", "128", checkIntRange(0, 1<<63-1), false)
	defConfig("acl-pubsub-default", "resetchannels", checkEnum("allchannels", "resetchannels"), false)
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

// SetUserLines installs CONFIG REWRITE's renderer of the user lines (the
// server's current ACL users, in "user" directive form).
func (c *Config) SetUserLines(f func() []string) {
	c.mu.Lock()
	c.userLines = f
	c.mu.Unlock()
}
