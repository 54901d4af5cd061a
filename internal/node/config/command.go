package config

import (
	"errors"
	"strings"

	"github.com/shardis/shardis/internal/node/glob"
)

// errProtectedConfig is CONFIG SET's reason for a PROTECTED_CONFIG
// directive when enable-protected-configs does not allow the client
// (config.c, configSetCommand).
const errProtectedConfig = "can't set protected config"

// Applier is a running server as CONFIG SET sees it (SetCommand). Every
// directive has both steps; a directive the server does nothing for
// returns nil from ApplyErr and does nothing in Apply.
type Applier interface {
	// ApplyErr is the step of a change that can fail (CONFIG SET port
	// listening on the new port). It is run with the new value for each
	// directive whose value the call changed, and with the old value to
	// undo the ones already applied when a later one fails.
	ApplyErr(d Directive, v string) error
	// Apply is run, once every ApplyErr succeeded, with the value of each
	// directive of the call.
	Apply(d Directive, v string)
}

// GetCommand answers CONFIG GET pattern [pattern ...] with name, value
// pairs: a name without glob characters is looked up exactly (hidden
// directives included, an alias shown under the name asked for); a
// pattern matches every name and alias (each its own entry), hidden
// directives excepted. Each name is listed once.
func (c *Config) GetCommand(patterns [][]byte) []string {
	seen := map[string]bool{}
	var pairs []string
	add := func(shown, name string) {
		if !seen[shown] {
			seen[shown] = true
			pairs = append(pairs, shown, c.byName(name))
		}
	}
	for _, a := range patterns {
		pat := strings.ToLower(string(a))
		if !strings.ContainsAny(pat, "[*?") {
			if name, d := canonicalName(pat); d != nil {
				add(pat, name)
			}
			continue
		}
		for _, name := range c.Names() {
			d := configDefs[name]
			if d.hidden {
				continue
			}
			if glob.Match(pat, name, true) {
				add(name, name)
			}
			if d.alias != "" && glob.Match(pat, d.alias, true) {
				add(d.alias, name)
			}
		}
	}
	return pairs
}

// SetCommand runs CONFIG SET parameter value [parameter value ...], given
// the parameter, value pairs, all or nothing: when a value is refused or
// cannot be applied (a port it cannot listen on), every directive of the
// call gets its old value back. allowProtected tells, from
// enable-protected-configs' value, whether the client may change a
// protected directive (Redis's allowProtectedAction). The error's text
// is the reply, Redis's word for word.
func (c *Config) SetCommand(pairs [][]byte, allowProtected func(setting string) bool, a Applier) error {
	if len(pairs)%2 != 0 {
		return errors.New("ERR wrong number of arguments for 'config|set' command")
	}
	type change struct{ arg, name, old, val string }
	var changes []change
	seen := map[string]bool{}
	failed := func(arg, reason string) error {
		return errors.New("ERR CONFIG SET failed (possibly related to argument '" + arg + "') - " + reason)
	}
	for i := 0; i < len(pairs); i += 2 {
		arg := string(pairs[i])
		canon, d := canonicalName(arg)
		if d == nil {
			return errors.New("ERR Unknown option or number of arguments for CONFIG SET - '" + arg + "'")
		}
		if d.immutable {
			return failed(arg, "can't set immutable config")
		}
		if d.protected && !allowProtected(c.Get(DirEnableProtectedConfigs)) {
			return failed(arg, errProtectedConfig)
		}
		if seen[canon] {
			return failed(arg, "duplicate parameter")
		}
		seen[canon] = true
		changes = append(changes, change{arg, canon, c.byName(canon), string(pairs[i+1])})
	}
	fail := func(ch change, err error, undo []change) error {
		for _, u := range undo {
			_ = c.Set(u.name, u.old)
		}
		return failed(ch.arg, strings.TrimPrefix(err.Error(), "argument(s) must be one of the following: "))
	}
	for i, ch := range changes {
		if err := c.Set(ch.name, ch.val); err != nil {
			return fail(ch, err, changes[:i])
		}
	}
	for i, ch := range changes {
		if ch.old == c.byName(ch.name) {
			continue
		}
		id := configDefs[ch.name].id
		if err := a.ApplyErr(id, c.byName(ch.name)); err != nil {
			reply := fail(ch, err, changes)
			// Undo the applies that succeeded.
			for _, u := range changes[:i] {
				if u.old != u.val {
					_ = a.ApplyErr(configDefs[u.name].id, u.old)
				}
			}
			return reply
		}
	}
	for _, ch := range changes {
		a.Apply(configDefs[ch.name].id, c.byName(ch.name))
	}
	return nil
}
