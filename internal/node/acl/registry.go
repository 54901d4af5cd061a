package acl

import (
	"fmt"
	"sort"
	"strings"
)

// Registry holds the users. It is not safe for concurrent use: the caller
// serialises access (and shares users read-only between changes: a change
// replaces the *User, so a client holding the old one keeps a consistent
// view until it looks the user up again).
type Registry struct {
	table *Table
	glob  func(pattern, s string) bool
	users map[string]*User
	// PubsubDefaultAll is acl-pubsub-default: true for allchannels, false
	// for resetchannels (7.0's default).
	PubsubDefaultAll bool
}

// NewRegistry returns a registry with only the default user ("on nopass
// ~* &* +@all"). glob matches a key or channel against a pattern as Redis's
// stringmatchlen does.
func NewRegistry(t *Table, glob func(pattern, s string) bool) *Registry {
	r := &Registry{table: t, glob: glob, users: make(map[string]*User)}
	r.users["default"] = r.newDefault()
	return r
}

// Table returns the command table the registry refers to.
func (r *Registry) Table() *Table { return r.table }

func (r *Registry) newUser(name string) *User {
	return &User{Name: name, selectors: []*selector{newSelector(r.table, true, r.PubsubDefaultAll)}}
}

func (r *Registry) newDefault() *User {
	u := r.newUser("default")
	for _, op := range []string{"+@all", "~*", "&*", "on", "nopass"} {
		_ = r.setUserRule(u, op)
	}
	return u
}

// User returns the named user, or nil.
func (r *Registry) User(name string) *User { return r.users[name] }

// Default returns the default user.
func (r *Registry) Default() *User { return r.users["default"] }

// Names returns the user names, sorted as Redis's radix tree orders them.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.users))
	for n := range r.users {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// SetUser applies rules to the named user, creating it if needed, as ACL
// SETUSER: all rules or none. It returns the new user and the old one (nil
// if created); the caller disconnects what the change requires
// (KillPubsub). The error text is the one ACL SETUSER replies.
func (r *Registry) SetUser(name string, rules []string) (nu, old *User, err error) {
	if hasSpace(name) {
		return nil, nil, fmt.Errorf("Usernames can't contain spaces or null characters")
	}
	merged, bad, ok := mergeSelectors(rules)
	if !ok {
		return nil, nil, fmt.Errorf("Unmatched parenthesis in acl selector starting at '%s'.", rules[bad])
	}
	old = r.users[name]
	var u *User
	if old != nil {
		u = old.clone()
	} else {
		u = r.newUser(name)
	}
	for _, op := range merged {
		if e := r.setUserRule(u, op); e != nil {
			return nil, nil, fmt.Errorf("Error in ACL SETUSER modifier '%s': %s", op, e.Error())
		}
	}
	u.desc = ""
	r.users[name] = u
	return u, old, nil
}

// SetDefaultPassword is requirepass: "" makes the default user nopass.
func (r *Registry) SetDefaultPassword(pass string) {
	u := r.Default().clone()
	_ = r.setUserRule(u, "resetpass")
	if pass != "" {
		_ = r.setUserRule(u, ">"+pass)
	} else {
		_ = r.setUserRule(u, "nopass")
	}
	r.users["default"] = u
}

// DelUser removes a user and returns it (nil if there was none). The
// default user cannot be removed (the caller refuses it first).
func (r *Registry) DelUser(name string) *User {
	u := r.users[name]
	if u != nil && name != "default" {
		delete(r.users, name)
		return u
	}
	return nil
}

// Authenticate returns the user that name and pass authenticate, or nil.
func (r *Registry) Authenticate(name, pass string) *User {
	u := r.users[name]
	if u == nil || !u.CheckPassword(pass) {
		return nil
	}
	return u
}

// AuthRequired reports whether a new connection must authenticate: the
// default user has a password, or is off.
func (r *Registry) AuthRequired() bool {
	d := r.Default()
	return !d.nopass || !d.enabled
}

// ParseLines parses the user lines of an ACL file (or of the user
// directives, one line each) into a fresh set of users, as ACL LOAD: any
// error leaves nothing loaded, and the returned text names every problem
// in Redis's words. filename prefixes the messages.
func (r *Registry) ParseLines(filename string, lines []string) (map[string]*User, error) {
	users := make(map[string]*User)
	var errs strings.Builder
	for i, line := range lines {
		n := i + 1
		line = strings.Trim(line, " \t\r\n")
		if line == "" {
			continue
		}
		argv := strings.Split(line, " ")
		argv = slicesDeleteEmpty(argv)
		if len(argv) == 0 {
			continue
		}
		if argv[0] != "user" || len(argv) < 2 {
			fmt.Fprintf(&errs, "%s:%d should start with user keyword followed by the username. ", filename, n)
			continue
		}
		name := argv[1]
		if hasSpace(name) {
			fmt.Fprintf(&errs, "'%s:%d: username '%s' contains invalid characters. ", filename, n, name)
			continue
		}
		if _, dup := users[name]; dup {
			fmt.Fprintf(&errs, "WARNING: Duplicate user '%s' found on line %d. ", name, n)
			continue
		}
		u := r.newUser(name)
		users[name] = u
		merged, _, ok := mergeSelectors(argv[2:])
		if !ok {
			fmt.Fprintf(&errs, "%s:%d: Unmatched parenthesis in selector definition.", filename, n)
		}
		syntax := false
		for _, op := range merged {
			op = strings.Trim(op, "\t\r\n")
			if err := r.setUserRule(u, op); err != nil {
				if err == ErrUnknownCommand {
					fmt.Fprintf(&errs, "%s:%d: Error in applying operation '%s': %s. ", filename, n, op, err.Error())
				} else if !syntax {
					fmt.Fprintf(&errs, "%s:%d: %s. ", filename, n, err.Error())
					syntax = true
				}
			}
		}
	}
	if errs.Len() > 0 {
		return nil, fmt.Errorf("%sWARNING: ACL errors detected, no change to the previously active ACL rules was performed", errs.String())
	}
	if users["default"] == nil {
		users["default"] = r.newDefault()
	}
	return users, nil
}

func slicesDeleteEmpty(a []string) []string {
	out := a[:0]
	for _, s := range a {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Replace installs a set of users from ParseLines and returns the ones
// replaced (their clients are disconnected by the caller, except the
// default user's, which Redis keeps).
func (r *Registry) Replace(users map[string]*User) (old map[string]*User) {
	old = r.users
	r.users = users
	return old
}

// ConfigLines renders every user as a "user <name> <rules>" line, sorted
// by name (ACL SAVE's file, CONFIG REWRITE's user lines).
func (r *Registry) ConfigLines() []string {
	var out []string
	for _, n := range r.Names() {
		out = append(out, "user "+n+" "+r.Describe(r.users[n]))
	}
	return out
}

// LoadConfigured applies "user" directives (each the words after "user")
// at start-up, as ACLLoadConfiguredUsers: a repeated default user starts
// from reset.
func (r *Registry) LoadConfigured(defs [][]string) error {
	seen := map[string]bool{}
	for _, def := range defs {
		if len(def) == 0 {
			continue
		}
		name := def[0]
		if seen[name] {
			return fmt.Errorf("acl: %w", ErrDuplicateUser)
		}
		seen[name] = true
		if hasSpace(name) {
			return fmt.Errorf("acl: Spaces not allowed in ACL usernames")
		}
		u := r.newUser(name)
		if name == "default" {
			u = r.Default().clone()
			_ = r.setUserRule(u, "reset")
		}
		merged, _, ok := mergeSelectors(def[1:])
		if !ok {
			return fmt.Errorf("acl: Unmatched parenthesis in acl selector of user '%s'", name)
		}
		for _, op := range merged {
			if err := r.setUserRule(u, op); err != nil {
				return fmt.Errorf("acl: Error loading ACL rule '%s' for the user named '%s': %w", op, name, err)
			}
		}
		r.users[name] = u
	}
	return nil
}
