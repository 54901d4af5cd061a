package acl

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"strings"
)

// Key permissions of a key pattern (%R~, %W~, ~).
const (
	PermRead  = 1
	PermWrite = 2
	PermAll   = PermRead | PermWrite
)

// Rule errors, with the texts of Redis's ACLSetUserStringError.
var (
	ErrUnknownCommand  = errors.New("Unknown command or category name in ACL")
	ErrSyntax          = errors.New("Syntax error")
	ErrKeyAfterAll     = errors.New("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
	ErrChannelAfterAll = errors.New("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels")
	ErrNoSuchPassword  = errors.New("The password you are trying to remove from the user does not exist")
	ErrBadHash         = errors.New("The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")
	ErrDuplicateUser   = errors.New("Duplicate user found. A user can only be defined once in config files")
	ErrFirstArgSub     = errors.New("Allowing first-arg of a subcommand is not supported")
)

type keyPattern struct {
	perm    int
	pattern string
}

func (p keyPattern) String() string {
	switch p.perm {
	case PermRead:
		return "%R~" + p.pattern
	case PermWrite:
		return "%W~" + p.pattern
	}
	return "~" + p.pattern
}

// selector is one set of permissions: the root selector of a user, or one
// of its (...) selectors.
type selector struct {
	root        bool
	allKeys     bool
	allChannels bool
	allCommands bool
	// future is Redis's reserved bit: set by +@all, so the description
	// starts from +@all.
	future bool
	bits   []uint64
	// firstArgs are the allowed first arguments of an otherwise denied
	// command without subcommands (+select|0), by command ID.
	firstArgs map[int][]string
	patterns  []keyPattern
	channels  []string
}

func newSelector(t *Table, root, allChannels bool) *selector {
	return &selector{root: root, allChannels: allChannels, bits: make([]uint64, t.words())}
}

func (s *selector) clone() *selector {
	d := *s
	d.bits = append([]uint64(nil), s.bits...)
	d.patterns = append([]keyPattern(nil), s.patterns...)
	d.channels = append([]string(nil), s.channels...)
	if s.firstArgs != nil {
		d.firstArgs = make(map[int][]string, len(s.firstArgs))
		for k, v := range s.firstArgs {
			d.firstArgs[k] = append([]string(nil), v...)
		}
	}
	return &d
}

func (s *selector) bit(id int) bool { return s.bits[id/64]&(1<<(id%64)) != 0 }

func (s *selector) setBit(id int, v bool) {
	if v {
		s.bits[id/64] |= 1 << (id % 64)
	} else {
		s.bits[id/64] &^= 1 << (id % 64)
		s.allCommands = false
	}
}

// change allows or denies a command; for a container, its subcommands too.
func (s *selector) change(c *Command, allow bool) {
	s.setBit(c.ID, allow)
	delete(s.firstArgs, c.ID)
	for _, sub := range c.Subs {
		s.setBit(sub.ID, allow)
	}
}

func (s *selector) setCategory(t *Table, cat Category, allow bool) {
	t.each(func(c *Command) {
		if c.Categories&cat != 0 {
			s.change(c, allow)
		}
	})
}

// User is one ACL user.
type User struct {
	// Name is the user's name.
	Name      string
	enabled   bool
	nopass    bool
	sanitize  int // 0 unset, 1 sanitize-payload, 2 skip-sanitize-payload
	passwords []string
	selectors []*selector // selectors[0] is the root selector
	desc      string      // cached Describe, "" when stale
}

// Enabled reports whether the user is "on".
func (u *User) Enabled() bool { return u.enabled }

// NoPass reports whether any password authenticates the user.
func (u *User) NoPass() bool { return u.nopass }

// Unrestricted reports whether the root selector allows every command,
// key and channel: the check can be skipped.
func (u *User) Unrestricted() bool {
	r := u.selectors[0]
	return r.allCommands && r.allKeys && r.allChannels
}

func (u *User) clone() *User {
	d := *u
	d.passwords = append([]string(nil), u.passwords...)
	d.selectors = make([]*selector, len(u.selectors))
	for i, s := range u.selectors {
		d.selectors[i] = s.clone()
	}
	return &d
}

// HashPassword is the hex SHA-256 a password is stored as (#hash).
func HashPassword(pass string) string {
	h := sha256.Sum256([]byte(pass))
	return hex.EncodeToString(h[:])
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// CheckPassword reports whether pass authenticates the user (in constant
// time per stored password). A disabled user never authenticates.
func (u *User) CheckPassword(pass string) bool {
	if !u.enabled {
		return false
	}
	if u.nopass {
		return true
	}
	h := HashPassword(pass)
	ok := false
	for _, p := range u.passwords {
		if subtle.ConstantTimeCompare([]byte(p), []byte(h)) == 1 {
			ok = true
		}
	}
	return ok
}

func hasSpace(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' || s[i] == 0 || s[i] == '\t' || s[i] == '\r' || s[i] == '\n' {
			return true
		}
	}
	return false
}

// setSelectorRule applies one selector rule (Redis's ACLSetSelector).
func (r *Registry) setSelectorRule(s *selector, op string) error {
	t := r.table
	switch {
	case strings.EqualFold(op, "allkeys") || op == "~*":
		s.allKeys, s.patterns = true, nil
	case strings.EqualFold(op, "resetkeys"):
		s.allKeys, s.patterns = false, nil
	case strings.EqualFold(op, "allchannels") || op == "&*":
		s.allChannels, s.channels = true, nil
	case strings.EqualFold(op, "resetchannels"):
		s.allChannels, s.channels = false, nil
	case strings.EqualFold(op, "allcommands") || strings.EqualFold(op, "+@all"):
		for i := range s.bits {
			s.bits[i] = ^uint64(0)
		}
		s.allCommands, s.future, s.firstArgs = true, true, nil
	case strings.EqualFold(op, "nocommands") || strings.EqualFold(op, "-@all"):
		for i := range s.bits {
			s.bits[i] = 0
		}
		s.allCommands, s.future, s.firstArgs = false, false, nil
	case op[0] == '~' || op[0] == '%':
		if s.allKeys {
			return ErrKeyAfterAll
		}
		perm, off := 0, 1
		if op[0] == '%' {
			for ; off < len(op); off++ {
				ch := op[off]
				if (ch == 'R' || ch == 'r') && perm&PermRead == 0 {
					perm |= PermRead
				} else if (ch == 'W' || ch == 'w') && perm&PermWrite == 0 {
					perm |= PermWrite
				} else if ch == '~' {
					off++
					break
				} else {
					return ErrSyntax
				}
			}
		} else {
			perm = PermAll
		}
		pat := ""
		if off <= len(op) {
			pat = op[min(off, len(op)):]
		}
		if hasSpace(pat) {
			return ErrSyntax
		}
		found := false
		for i := range s.patterns {
			if s.patterns[i].pattern == pat {
				s.patterns[i].perm |= perm
				found = true
				break
			}
		}
		if !found {
			s.patterns = append(s.patterns, keyPattern{perm: perm, pattern: pat})
		}
		s.allKeys = false
	case op[0] == '&':
		if s.allChannels {
			return ErrChannelAfterAll
		}
		pat := op[1:]
		if hasSpace(pat) {
			return ErrSyntax
		}
		dup := false
		for _, c := range s.channels {
			dup = dup || c == pat
		}
		if !dup {
			s.channels = append(s.channels, pat)
		}
		s.allChannels = false
	case op[0] == '+' && (len(op) < 2 || op[1] != '@'):
		name := op[1:]
		i := strings.LastIndexByte(name, '|')
		if i < 0 {
			c := t.Lookup(name)
			if c == nil {
				return ErrUnknownCommand
			}
			s.change(c, true)
			return nil
		}
		c := t.Lookup(name[:i])
		if c == nil {
			return ErrUnknownCommand
		}
		if c.Parent != nil {
			return ErrFirstArgSub
		}
		sub := name[i+1:]
		if sub == "" {
			return ErrSyntax
		}
		if len(c.Subs) > 0 {
			sc := t.Lookup(name)
			if sc == nil {
				return ErrUnknownCommand
			}
			s.change(sc, true)
			return nil
		}
		if s.firstArgs == nil {
			s.firstArgs = make(map[int][]string)
		}
		for _, a := range s.firstArgs[c.ID] {
			if strings.EqualFold(a, sub) {
				return nil
			}
		}
		s.firstArgs[c.ID] = append(s.firstArgs[c.ID], sub)
	case op[0] == '-' && (len(op) < 2 || op[1] != '@'):
		c := t.Lookup(op[1:])
		if c == nil {
			return ErrUnknownCommand
		}
		s.change(c, false)
	case (op[0] == '+' || op[0] == '-') && op[1] == '@':
		cat := CategoryByName(op[2:])
		if cat == 0 {
			return ErrUnknownCommand
		}
		s.setCategory(t, cat, op[0] == '+')
	default:
		return ErrSyntax
	}
	return nil
}

// setUserRule applies one rule to u (Redis's ACLSetUser).
func (r *Registry) setUserRule(u *User, op string) error {
	u.desc = ""
	if op == "" {
		return nil
	}
	switch {
	case strings.EqualFold(op, "on"):
		u.enabled = true
	case strings.EqualFold(op, "off"):
		u.enabled = false
	case strings.EqualFold(op, "skip-sanitize-payload"):
		u.sanitize = 2
	case strings.EqualFold(op, "sanitize-payload"):
		u.sanitize = 1
	case strings.EqualFold(op, "nopass"):
		u.nopass, u.passwords = true, nil
	case strings.EqualFold(op, "resetpass"):
		u.nopass, u.passwords = false, nil
	case op[0] == '>' || op[0] == '#':
		h := op[1:]
		if op[0] == '>' {
			h = HashPassword(h)
		} else if !validHash(h) {
			return ErrBadHash
		}
		dup := false
		for _, p := range u.passwords {
			dup = dup || p == h
		}
		if !dup {
			u.passwords = append(u.passwords, h)
		}
		u.nopass = false
	case op[0] == '<' || op[0] == '!':
		h := op[1:]
		if op[0] == '<' {
			h = HashPassword(h)
		} else if !validHash(h) {
			return ErrBadHash
		}
		for i, p := range u.passwords {
			if p == h {
				u.passwords = append(u.passwords[:i], u.passwords[i+1:]...)
				return nil
			}
		}
		return ErrNoSuchPassword
	case op[0] == '(' && op[len(op)-1] == ')':
		s := newSelector(r.table, false, r.PubsubDefaultAll)
		for _, a := range splitArgs(op[1 : len(op)-1]) {
			if err := r.setSelectorRule(s, a); err != nil {
				return err
			}
		}
		u.selectors = append(u.selectors, s)
	case strings.EqualFold(op, "clearselectors"):
		u.selectors = u.selectors[:1]
	case strings.EqualFold(op, "reset"):
		u.nopass, u.passwords = false, nil
		root := u.selectors[0]
		root.allKeys, root.patterns = false, nil
		root.allChannels, root.channels = r.PubsubDefaultAll, nil
		u.enabled = false
		u.sanitize = 1
		u.selectors = u.selectors[:1]
		return r.setSelectorRule(root, "-@all")
	default:
		return r.setSelectorRule(u.selectors[0], op)
	}
	return nil
}

// splitArgs splits a selector's inside on spaces, as sdssplitargs does
// for the plain words rules are made of.
func splitArgs(s string) []string { return strings.Fields(s) }

// mergeSelectors joins a selector spread over several arguments ("(~x",
// "+get)") into one, as Redis's ACLMergeSelectorArguments. bad is the
// index of an unclosed one (ok false).
func mergeSelectors(args []string) (out []string, bad int, ok bool) {
	open := -1
	var cur string
	for j, op := range args {
		if open < 0 && len(op) > 0 && op[0] == '(' && op[len(op)-1] != ')' {
			cur, open = op, j
			continue
		}
		if open >= 0 {
			cur += " " + op
			if len(op) > 0 && op[len(op)-1] == ')' {
				open = -1
				out = append(out, cur)
			}
			continue
		}
		out = append(out, op)
	}
	if open >= 0 {
		return nil, open, false
	}
	return out, 0, true
}
