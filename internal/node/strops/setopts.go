package strops

import "strconv"

// Flags of SET and GETEX, as Redis's parseExtendedStringArgumentsOrReply
// parses them.
const (
	SetNX = 1 << iota
	SetXX
	SetEX
	SetPX
	SetKeepTTL
	SetGet
	SetEXAT
	SetPXAT
	SetPersist

	// SetAnyExpire is any of EX, PX, EXAT and PXAT.
	SetAnyExpire = SetEX | SetPX | SetEXAT | SetPXAT
)

// SetOptions are SET's or GETEX's parsed options.
type SetOptions struct {
	// Flags is a set of the Set* flags.
	Flags int
	// Expire is the argument of EX, PX, EXAT or PXAT, nil if none.
	Expire []byte
}

// expireOption returns the flag of an EX, PX, EXAT or PXAT option, 0 for
// any other argument.
func expireOption(a []byte) int {
	switch {
	case eqFold(a, "EX"):
		return SetEX
	case eqFold(a, "PX"):
		return SetPX
	case eqFold(a, "EXAT"):
		return SetEXAT
	case eqFold(a, "PXAT"):
		return SetPXAT
	}
	return 0
}

// ParseSetOptions parses SET's (forSet) or GETEX's options.
func ParseSetOptions(opts [][]byte, forSet bool) (SetOptions, error) {
	var o SetOptions
	for j := 0; j < len(opts); j++ {
		a := opts[j]
		hasNext := j+1 < len(opts)
		switch {
		case forSet && eqFold(a, "NX") && o.Flags&SetXX == 0:
			o.Flags |= SetNX
		case forSet && eqFold(a, "XX") && o.Flags&SetNX == 0:
			o.Flags |= SetXX
		case forSet && eqFold(a, "GET"):
			o.Flags |= SetGet
		case forSet && eqFold(a, "KEEPTTL") && o.Flags&(SetPersist|SetAnyExpire) == 0:
			o.Flags |= SetKeepTTL
		case !forSet && eqFold(a, "PERSIST") && o.Flags&(SetKeepTTL|SetAnyExpire) == 0:
			o.Flags |= SetPersist
		case hasNext && expireOption(a) != 0 && o.Flags&(SetKeepTTL|SetPersist|SetAnyExpire&^expireOption(a)) == 0:
			// EX, PX, EXAT or PXAT: one kind only (repeating it is
			// allowed, the last value wins).
			o.Flags |= expireOption(a)
			o.Expire = opts[j+1]
			j++
		default:
			return SetOptions{}, ErrSyntax
		}
	}
	return o, nil
}

// InvalidExpire is the reply to an expire time out of range for command
// name (lower case).
func InvalidExpire(name string) error {
	return &expireError{name}
}

type expireError struct{ name string }

func (e *expireError) Error() string { return "ERR invalid expire time in '" + e.name + "' command" }

// ExpireAt converts the expire argument of SET/GETEX/SETEX/PSETEX (its
// kind in flags: SetEX, SetPX, SetEXAT or SetPXAT) to an absolute unix
// time in ms at now, refusing what is not a positive integer or
// overflows, as Redis does.
func ExpireAt(arg []byte, flags int, now int64, name string) (int64, error) {
	ms, ok := parseInt(arg)
	if !ok {
		return 0, ErrNotInt
	}
	seconds := flags&(SetEX|SetEXAT) != 0
	if ms <= 0 || (seconds && ms > (1<<63-1)/1000) {
		return 0, InvalidExpire(name)
	}
	if seconds {
		ms *= 1000
	}
	if flags&(SetEX|SetPX) != 0 {
		ms += now // wraps negative on overflow, caught below
	}
	if ms <= 0 {
		return 0, InvalidExpire(name)
	}
	return ms, nil
}

// SetPropagation is the command a SET with an expire or with GET is
// propagated as: with the absolute time when in ms (PXAT) when hasExpire,
// as Redis 7 does, else with its options opts but without GET.
func SetPropagation(key, val []byte, opts [][]byte, when int64, hasExpire bool) [][]byte {
	if hasExpire {
		return [][]byte{[]byte("SET"), key, val, []byte("PXAT"), strconv.AppendInt(nil, when, 10)}
	}
	prop := [][]byte{[]byte("SET"), key, val}
	for _, a := range opts {
		if !eqFold(a, "GET") {
			prop = append(prop, a)
		}
	}
	return prop
}
