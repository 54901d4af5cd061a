package acl

import (
	"strings"
	"unsafe"
)

// view is b as a string without a copy, for matching only: the matchers
// never keep the string, and the caller does not change b meanwhile.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// Result is the outcome of a permission check. The values order the
// errors as Redis picks the one to report among several selectors.
type Result int

// Check results (Redis's ACL_OK, ACL_DENIED_*).
const (
	OK Result = iota
	DeniedCmd
	DeniedKey
	DeniedAuth
	DeniedChannel
)

// KeyRef is one key argument of a call: its position and the permissions
// its key spec needs (PermRead for access, PermWrite for insert, delete or
// update).
type KeyRef struct {
	Pos  int
	Perm int
}

// ChannelRef is one channel argument of a publish or subscribe: Pattern
// for PSUBSCRIBE's patterns, which match ACL patterns literally.
type ChannelRef struct {
	Pos     int
	Pattern bool
}

// Call is what the check needs to know about one command call.
type Call struct {
	Cmd  *Command
	Args [][]byte
	// Keys and Channels are the call's key and channel arguments; the
	// caller fills them only when NeedsKeys or NeedsChannels says so.
	Keys     []KeyRef
	Channels []ChannelRef
}

// NeedsKeys reports whether some selector restricts keys, so the check
// needs the call's keys.
func (u *User) NeedsKeys() bool {
	for _, s := range u.selectors {
		if !s.allKeys {
			return true
		}
	}
	return false
}

// NeedsChannels reports whether some selector restricts channels.
func (u *User) NeedsChannels() bool {
	for _, s := range u.selectors {
		if !s.allChannels {
			return true
		}
	}
	return false
}

// Check is Redis's ACLCheckAllUserCommandPerm: OK when one selector
// allows the command with all its keys and channels, otherwise the most
// relevant refusal and the argument position it concerns.
func (r *Registry) Check(u *User, call *Call) (Result, int) {
	relevant, last := DeniedCmd, 0
	for _, s := range u.selectors {
		res, idx := r.checkSelector(s, call)
		if res == OK {
			return OK, 0
		}
		if res > relevant || (res == relevant && idx > last) {
			relevant, last = res, idx
		}
	}
	return relevant, last
}

func (r *Registry) checkSelector(s *selector, call *Call) (Result, int) {
	cmd := call.Cmd
	if !s.allCommands && !cmd.NoAuth && !s.bit(cmd.ID) {
		fa := s.firstArgs[cmd.ID]
		idx := 1
		if cmd.Parent != nil {
			idx = 2
		}
		if len(call.Args) <= idx || fa == nil {
			return DeniedCmd, 0
		}
		ok := false
		for _, a := range fa {
			if strings.EqualFold(view(call.Args[idx]), a) {
				ok = true
				break
			}
		}
		if !ok {
			return DeniedCmd, 0
		}
	}
	if !s.allKeys {
		for _, k := range call.Keys {
			if !r.keyAllowed(s, view(call.Args[k.Pos]), k.Perm) {
				return DeniedKey, k.Pos
			}
		}
	}
	if !s.allChannels {
		for _, ch := range call.Channels {
			if !r.channelAllowed(s.channels, view(call.Args[ch.Pos]), ch.Pattern) {
				return DeniedChannel, ch.Pos
			}
		}
	}
	return OK, 0
}

func (r *Registry) keyAllowed(s *selector, key string, perm int) bool {
	if s.allKeys {
		return true
	}
	for _, p := range s.patterns {
		if p.perm&perm != perm {
			continue
		}
		if r.glob(p.pattern, key) {
			return true
		}
	}
	return false
}

func (r *Registry) channelAllowed(list []string, ch string, pattern bool) bool {
	for _, p := range list {
		if (pattern && p == ch) || (!pattern && r.glob(p, ch)) {
			return true
		}
	}
	return false
}

// CheckKey is ACLUserCheckKeyPerm: whether some selector allows perm on
// key (commands that find their keys late, such as SORT's GET patterns).
func (r *Registry) CheckKey(u *User, key string, perm int) bool {
	for _, s := range u.selectors {
		if r.keyAllowed(s, key, perm) {
			return true
		}
	}
	return false
}

// CheckChannel is ACLUserCheckChannelPerm.
func (r *Registry) CheckChannel(u *User, ch string, pattern bool) bool {
	for _, s := range u.selectors {
		if s.allChannels || r.channelAllowed(s.channels, ch, pattern) {
			return true
		}
	}
	return false
}

// PubsubKillNeeded reports whether clients of old subscribed to channels
// must be checked after the change to nu (Redis's
// ACLKillPubsubClientsIfNeeded's shortcuts): false when nu allows every
// channel or its channels include all of old's.
func PubsubKillNeeded(nu, old *User) bool {
	for _, s := range nu.selectors {
		if s.allChannels {
			return false
		}
	}
	upcoming := map[string]bool{}
	for _, s := range nu.selectors {
		for _, c := range s.channels {
			upcoming[c] = true
		}
	}
	for _, s := range old.selectors {
		if s.allChannels {
			return true
		}
		for _, c := range s.channels {
			if !upcoming[c] {
				return true
			}
		}
	}
	return false
}

// SubscriberAllowed reports whether a subscriber with these channels,
// patterns and shard channels keeps its rights under nu (its channel
// patterns of all selectors taken together, as Redis checks them).
func (r *Registry) SubscriberAllowed(nu *User, channels, patterns, shard []string) bool {
	var upcoming []string
	for _, s := range nu.selectors {
		if s.allChannels {
			return true
		}
		upcoming = append(upcoming, s.channels...)
	}
	for _, p := range patterns {
		if !r.channelAllowed(upcoming, p, true) {
			return false
		}
	}
	for _, c := range channels {
		if !r.channelAllowed(upcoming, c, false) {
			return false
		}
	}
	for _, c := range shard {
		if !r.channelAllowed(upcoming, c, false) {
			return false
		}
	}
	return true
}

// DeniedMessage is getAclErrorMessage: the end of a script's refusal
// ("The user executing the script " + it).
func DeniedMessage(res Result) string {
	switch res {
	case DeniedCmd:
		return "can't run this command or subcommand"
	case DeniedKey:
		return "can't access at least one of the keys mentioned in the command arguments"
	case DeniedChannel:
		return "can't publish to the channel mentioned in the command"
	}
	return "lacking the permissions for the command"
}

// NoPermError is processCommand's NOPERM reply for res.
func NoPermError(res Result, fullName string) string {
	switch res {
	case DeniedCmd:
		return "NOPERM this user has no permissions to run the '" + fullName + "' command"
	case DeniedKey:
		return "NOPERM this user has no permissions to access one of the keys used as arguments"
	case DeniedChannel:
		return "NOPERM this user has no permissions to access one of the channels used as arguments"
	}
	return "ERR no permission"
}

// CheckUnrestrictedKeys is ACLUserCheckCmdWithUnrestrictedKeyAccess: some
// selector allows the call and grants perm on every key (allkeys, or a
// "*" pattern with perm).
func (r *Registry) CheckUnrestrictedKeys(u *User, call *Call, perm int) bool {
	for _, s := range u.selectors {
		if res, _ := r.checkSelector(s, call); res != OK {
			continue
		}
		if s.allKeys {
			return true
		}
		for _, p := range s.patterns {
			if p.perm&perm == perm && p.pattern == "*" {
				return true
			}
		}
	}
	return false
}
