package runner

import (
	"fmt"
	"sort"
	"strings"

	"github.com/shardis/shardis/internal/resp"
)

// aclUser is a user of the Sentinel's own port (ACL SETUSER). Only what
// Sentinel deployments use is modelled: on/off and passwords; command and
// key rules are accepted and not enforced.
type aclUser struct {
	on     bool
	nopass bool
	passes map[string]bool
}

// initUsers creates the default user from requirepass (r.mu held).
func (r *Runner) initUsers() {
	d := &aclUser{on: true, passes: map[string]bool{}}
	if r.file.RequirePass == "" {
		d.nopass = true
	} else {
		d.passes[r.file.RequirePass] = true
	}
	r.users = map[string]*aclUser{"default": d}
}

// defaultAuthed reports whether new connections start authenticated.
func (r *Runner) defaultAuthed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.users["default"]
	return d != nil && d.on && d.nopass
}

// checkPass authenticates user (default if empty) with pass.
func (r *Runner) checkPass(user, pass string) bool {
	if user == "" {
		user = "default"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.users[user]
	return u != nil && u.on && (u.nopass || u.passes[pass])
}

// cmdACL serves ACL SETUSER/DELUSER/WHOAMI/USERS/LIST.
func (r *Runner) cmdACL(c *client, args []string) []byte {
	if len(args) < 2 {
		return resp.AppendError(nil, errArity("acl"))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch strings.ToUpper(args[1]) {
	case "WHOAMI":
		return resp.AppendBulkString(nil, c.user)
	case "USERS":
		names := r.userNames()
		b := resp.AppendArrayLen(nil, len(names))
		for _, n := range names {
			b = resp.AppendBulkString(b, n)
		}
		return b
	case "LIST":
		names := r.userNames()
		b := resp.AppendArrayLen(nil, len(names))
		for _, n := range names {
			u := r.users[n]
			line := "user " + n
			if u.on {
				line += " on"
			} else {
				line += " off"
			}
			if u.nopass {
				line += " nopass"
			}
			b = resp.AppendBulkString(b, line+" ~* &* +@all")
		}
		return b
	case "SETUSER":
		if len(args) < 3 {
			return resp.AppendError(nil, errArity("acl|setuser"))
		}
		u := r.users[args[2]]
		nu := &aclUser{passes: map[string]bool{}}
		if u != nil {
			*nu = *u
			nu.passes = map[string]bool{}
			for p := range u.passes {
				nu.passes[p] = true
			}
		}
		for _, rule := range args[3:] {
			switch lr := strings.ToLower(rule); {
			case lr == "on":
				nu.on = true
			case lr == "off":
				nu.on = false
			case lr == "nopass":
				nu.nopass, nu.passes = true, map[string]bool{}
			case lr == "resetpass":
				nu.nopass, nu.passes = false, map[string]bool{}
			case lr == "reset":
				nu = &aclUser{passes: map[string]bool{}}
			case strings.HasPrefix(rule, ">"):
				nu.passes[rule[1:]] = true
				nu.nopass = false
			case strings.HasPrefix(rule, "<"):
				delete(nu.passes, rule[1:])
			case strings.HasPrefix(rule, "+"), strings.HasPrefix(rule, "-"), strings.HasPrefix(rule, "~"),
				strings.HasPrefix(rule, "&"), strings.HasPrefix(rule, "%"), lr == "allkeys", lr == "allchannels",
				lr == "allcommands", lr == "nocommands", lr == "resetkeys", lr == "resetchannels":
			default:
				return resp.AppendError(nil, fmt.Sprintf("ERR Error in ACL SETUSER modifier '%s': Syntax error", rule))
			}
		}
		r.users[args[2]] = nu
		return resp.AppendOK(nil)
	case "DELUSER":
		n := 0
		for _, name := range args[2:] {
			if name == "default" {
				return resp.AppendError(nil, "ERR The 'default' user cannot be removed")
			}
			if r.users[name] != nil {
				delete(r.users, name)
				n++
			}
		}
		return resp.AppendInt(nil, int64(n))
	}
	return resp.AppendError(nil, fmt.Sprintf("ERR unknown subcommand '%s'. Try ACL HELP.", args[1]))
}

func (r *Runner) userNames() []string {
	var out []string
	for n := range r.users {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
