package acl

import "strings"

// Flags returns the user's flags as ACL GETUSER lists them, in Redis's
// order (on/off, nopass, skip-sanitize-payload, sanitize-payload).
func (u *User) Flags() []string {
	var out []string
	if u.enabled {
		out = append(out, "on")
	} else {
		out = append(out, "off")
	}
	if u.nopass {
		out = append(out, "nopass")
	}
	switch u.sanitize {
	case 2:
		out = append(out, "skip-sanitize-payload")
	case 1:
		out = append(out, "sanitize-payload")
	}
	return out
}

// Passwords returns the user's password hashes (hex SHA-256), in the
// order they were added.
func (u *User) Passwords() []string { return append([]string(nil), u.passwords...) }

// SelectorInfo is one selector as ACL GETUSER shows it.
type SelectorInfo struct {
	Commands string // "+@all -debug", as ACL SETUSER takes it back
	Keys     string // "~*" or "%R~a ~b", "" for none
	Channels string // "&*" or "&a &b", "" for none
}

// Selectors describes the root selector first, then the others.
func (r *Registry) Selectors(u *User) []SelectorInfo {
	out := make([]SelectorInfo, len(u.selectors))
	for i, s := range u.selectors {
		var si SelectorInfo
		si.Commands = r.describeCommands(s)
		if s.allKeys {
			si.Keys = "~*"
		} else {
			var ks []string
			for _, p := range s.patterns {
				ks = append(ks, p.String())
			}
			si.Keys = strings.Join(ks, " ")
		}
		if s.allChannels {
			si.Channels = "&*"
		} else {
			var cs []string
			for _, c := range s.channels {
				cs = append(cs, "&"+c)
			}
			si.Channels = strings.Join(cs, " ")
		}
		out[i] = si
	}
	return out
}

// Describe renders the user's rules as ACL LIST shows them after
// "user <name> " (Redis's ACLDescribeUser).
func (r *Registry) Describe(u *User) string {
	if u.desc != "" {
		return u.desc
	}
	var b strings.Builder
	for _, f := range u.Flags() {
		b.WriteString(f)
		b.WriteByte(' ')
	}
	for _, p := range u.passwords {
		b.WriteByte('#')
		b.WriteString(p)
		b.WriteByte(' ')
	}
	for _, s := range u.selectors {
		d := r.describeSelector(s)
		if s.root {
			b.WriteString(d)
		} else {
			b.WriteString(" (")
			b.WriteString(d)
			b.WriteByte(')')
		}
	}
	u.desc = b.String()
	return u.desc
}

func (r *Registry) describeSelector(s *selector) string {
	var b strings.Builder
	if s.allKeys {
		b.WriteString("~* ")
	} else {
		for _, p := range s.patterns {
			b.WriteString(p.String())
			b.WriteByte(' ')
		}
	}
	if s.allChannels {
		b.WriteString("&* ")
	} else {
		b.WriteString("resetchannels ")
		for _, c := range s.channels {
			b.WriteByte('&')
			b.WriteString(c)
			b.WriteByte(' ')
		}
	}
	b.WriteString(r.describeCommands(s))
	return b.String()
}

// countCategory counts the commands of cat allowed (on) and denied (off)
// by the bitmap bits.
func (r *Registry) countCategory(bits []uint64, cat Category) (on, off int) {
	r.table.each(func(c *Command) {
		if c.Categories&cat == 0 {
			return
		}
		if bits[c.ID/64]&(1<<(c.ID%64)) != 0 {
			on++
		} else {
			off++
		}
	})
	return on, off
}

// describeCommands is Redis's ACLDescribeSelectorCommandRules: +@all or
// -@all, then the categories that fit best, one at a time, then the single
// commands (and first arguments) that make the bitmap exact.
func (r *Registry) describeCommands(s *selector) string {
	t := r.table
	var rules []string
	fake := newSelector(t, false, false)
	additive := !s.future
	if additive {
		rules = append(rules, "-@all")
	} else {
		rules = append(rules, "+@all")
		_ = r.setSelectorRule(fake, "+@all")
	}
	temp := &selector{bits: append([]uint64(nil), s.bits...)}
	applied := make([]bool, len(Categories))
	for {
		best, minDiff, maxSame := -1, int(^uint(0)>>1), 0
		for j := range Categories {
			if applied[j] {
				continue
			}
			on, off := r.countCategory(temp.bits, 1<<j)
			diff, same := on, off
			if additive {
				diff, same = off, on
			}
			if same > diff && (diff < minDiff || (diff == minDiff && same > maxSame)) {
				best, minDiff, maxSame = j, diff, same
			}
		}
		if best < 0 {
			break
		}
		cat := Category(1) << best
		fake.setCategory(t, cat, additive)
		temp.setCategory(t, cat, !additive)
		sign := "-@"
		if additive {
			sign = "+@"
		}
		rules = append(rules, sign+Categories[best])
		applied[best] = true
	}
	t.each(func(c *Command) {
		ub, fb := s.bit(c.ID), fake.bit(c.ID)
		if ub != fb {
			if ub {
				rules = append(rules, "+"+c.FullName)
			} else {
				rules = append(rules, "-"+c.FullName)
			}
			fake.change(c, ub)
		}
		if !ub {
			for _, a := range s.firstArgs[c.ID] {
				rules = append(rules, "+"+c.FullName+"|"+a)
			}
		}
	})
	return strings.Join(rules, " ")
}
