// Package clients holds what the CLIENT command family says about
// connections, as pure data: client types and their names, the CLIENT
// LIST / CLIENT INFO line with Redis 7.0's fields in its order and its
// flag letters, the grammars of CLIENT LIST, CLIENT KILL, CLIENT PAUSE
// and CLIENT UNBLOCK with Redis's exact error texts, and CLIENT HELP.
// The node fills a Line or a Candidate from its connections; nothing here
// sees one.
package clients

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/shardis/shardis/internal/node/value"
)

// Type is a client type, as CLIENT LIST TYPE and
// client-output-buffer-limit name them.
type Type int

// The client types (Redis's CLIENT_TYPE_*).
const (
	Normal Type = iota
	Slave
	PubSub
	Master
)

// TypeByName parses a client type name ("replica" is "slave"); ok is
// false for an unknown name.
func TypeByName(name []byte) (Type, bool) {
	switch strings.ToLower(string(name)) {
	case "normal":
		return Normal, true
	case "slave", "replica":
		return Slave, true
	case "pubsub":
		return PubSub, true
	case "master":
		return Master, true
	}
	return 0, false
}

// Flags are the states CLIENT LIST shows as flags= letters.
type Flags struct {
	Monitor, Replica, Master, PubSub, Multi, Blocked bool
	DirtyCAS, CloseAfterReply, ReadOnly, NoEvict     bool
}

// String is the flags= value: O (monitor) or S (replica) first, then the
// others in Redis's order, N when none.
func (f Flags) String() string {
	var b []byte
	switch {
	case f.Monitor:
		b = append(b, 'O')
	case f.Replica:
		b = append(b, 'S')
	}
	for _, l := range [...]struct {
		on     bool
		letter byte
	}{
		{f.Master, 'M'}, {f.PubSub, 'P'}, {f.Multi, 'x'}, {f.Blocked, 'b'},
		{f.DirtyCAS, 'd'}, {f.CloseAfterReply, 'c'}, {f.ReadOnly, 'r'}, {f.NoEvict, 'e'},
	} {
		if l.on {
			b = append(b, l.letter)
		}
	}
	if len(b) == 0 {
		return "N"
	}
	return string(b)
}

// Line is one client's CLIENT LIST entry.
type Line struct {
	ID          int64
	Addr, LAddr string
	FD          int
	Name        string
	Age, Idle   int64 // seconds
	Flags       Flags
	DB          int
	Sub, PSub   int
	Multi       int // queued commands, -1 outside MULTI
	QBuf        int // query buffer bytes
	QBufFree    int
	ArgvMem     int
	MultiMem    int    // bytes of the queued commands' arguments
	OMem        int    // pending output bytes
	Cmd         string // last command, "" for none (NULL)
	User        string
	Resp        int
}

// String renders the line as Redis 7.0 prints it, without the newline.
func (l Line) String() string {
	cmd := l.Cmd
	if cmd == "" {
		cmd = "NULL"
	}
	totMem := 1024 + l.QBuf + l.QBufFree + l.OMem + l.ArgvMem + l.MultiMem
	b := make([]byte, 0, 300)
	w := func(k, v string) {
		if len(b) > 0 {
			b = append(b, ' ')
		}
		b = append(b, k...)
		b = append(b, '=')
		b = append(b, v...)
	}
	itoa := strconv.Itoa
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	w("id", i64(l.ID))
	w("addr", l.Addr)
	w("laddr", l.LAddr)
	w("fd", itoa(l.FD))
	w("name", l.Name)
	w("age", i64(l.Age))
	w("idle", i64(max(l.Idle, 0)))
	w("flags", l.Flags.String())
	w("db", itoa(l.DB))
	w("sub", itoa(l.Sub))
	w("psub", itoa(l.PSub))
	w("ssub", "0")
	w("multi", itoa(l.Multi))
	w("qbuf", itoa(l.QBuf))
	w("qbuf-free", itoa(l.QBufFree))
	w("argv-mem", itoa(l.ArgvMem))
	w("multi-mem", itoa(l.MultiMem))
	w("rbs", "1024")
	w("rbp", "0")
	w("obl", "0")
	w("oll", "0")
	w("omem", itoa(l.OMem))
	w("tot-mem", itoa(totMem))
	w("events", "r")
	w("cmd", cmd)
	w("user", l.User)
	w("redir", "-1")
	w("resp", itoa(l.Resp))
	return string(b)
}

// Redis's error texts for the family's arguments.
var (
	ErrSyntax        = errors.New("ERR syntax error")
	ErrNotInt        = errors.New("ERR value is not an integer or out of range")
	ErrInvalidID     = errors.New("ERR Invalid client ID")
	ErrKillID        = errors.New("ERR client-id should be greater than 0")
	ErrTimeoutNotInt = errors.New("ERR timeout is not an integer or out of range")
	ErrTimeoutNeg    = errors.New("ERR timeout is negative")
	ErrPauseMode     = errors.New("ERR CLIENT PAUSE mode must be WRITE or ALL")
	ErrUnblockReason = errors.New("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
)

func errUnknownType(name []byte) error {
	return errors.New("ERR Unknown client type '" + string(name) + "'")
}

// ListFilter is CLIENT LIST's selection: all clients, one type, or the
// given ids (in their order).
type ListFilter struct {
	Type  *Type
	IDs   []int64
	ByIDs bool
}

// ParseList parses the arguments after CLIENT LIST:
// [TYPE normal|master|replica|pubsub] or [ID id [id ...]].
func ParseList(args [][]byte) (ListFilter, error) {
	var f ListFilter
	switch {
	case len(args) == 0:
	case len(args) == 2 && strings.EqualFold(string(args[0]), "type"):
		t, ok := TypeByName(args[1])
		if !ok {
			return f, errUnknownType(args[1])
		}
		f.Type = &t
	case len(args) > 1 && strings.EqualFold(string(args[0]), "id"):
		f.ByIDs = true
		for _, a := range args[1:] {
			id, ok := value.ParseInt(a)
			if !ok {
				return f, ErrInvalidID
			}
			f.IDs = append(f.IDs, id)
		}
	default:
		return f, ErrSyntax
	}
	return f, nil
}

// Candidate is what CLIENT KILL's filters look at in a client.
type Candidate struct {
	ID          int64
	Addr, LAddr string
	Type        Type
	User        string
	Age         time.Duration
	Self        bool // the client running CLIENT KILL
}

// KillFilter is a parsed CLIENT KILL.
type KillFilter struct {
	// Legacy is the old form CLIENT KILL ip:port: it replies OK or an
	// error, and may kill the caller itself.
	Legacy            bool
	Addr, LAddr, User *string
	Type              *Type
	ID                int64 // 0: any
	MaxAge            int64 // seconds, 0: any
	SkipMe            bool
}

// ParseKill parses the arguments after CLIENT KILL: ip:port, or
// [ID id] [TYPE type] [ADDR ip:port] [LADDR ip:port] [USER name]
// [SKIPME yes|no] [MAXAGE secs]. knownUser reports whether a USER name
// exists.
func ParseKill(args [][]byte, knownUser func(string) bool) (KillFilter, error) {
	f := KillFilter{SkipMe: true}
	if len(args) == 1 {
		a := string(args[0])
		return KillFilter{Legacy: true, Addr: &a}, nil
	}
	if len(args)%2 != 0 {
		return f, ErrSyntax
	}
	for i := 0; i+1 < len(args); i += 2 {
		v := string(args[i+1])
		switch strings.ToLower(string(args[i])) {
		case "id":
			n, ok := value.ParseInt(args[i+1])
			if !ok || n < 1 {
				return f, ErrKillID
			}
			f.ID = n
		case "type":
			t, ok := TypeByName(args[i+1])
			if !ok {
				return f, errUnknownType(args[i+1])
			}
			f.Type = &t
		case "addr":
			f.Addr = &v
		case "laddr":
			f.LAddr = &v
		case "user":
			if !knownUser(v) {
				return f, errors.New("ERR No such user '" + v + "'")
			}
			f.User = &v
		case "skipme":
			switch strings.ToLower(v) {
			case "yes":
				f.SkipMe = true
			case "no":
				f.SkipMe = false
			default:
				return f, ErrSyntax
			}
		case "maxage":
			n, ok := value.ParseInt(args[i+1])
			if !ok {
				return f, ErrNotInt
			}
			f.MaxAge = n
		default:
			return f, ErrSyntax
		}
	}
	return f, nil
}

// Match reports whether the filter kills c.
func (f KillFilter) Match(c Candidate) bool {
	switch {
	case f.Addr != nil && c.Addr != *f.Addr,
		f.LAddr != nil && c.LAddr != *f.LAddr,
		f.Type != nil && c.Type != *f.Type,
		f.ID != 0 && c.ID != f.ID,
		f.User != nil && c.User != *f.User,
		f.MaxAge > 0 && c.Age < time.Duration(f.MaxAge)*time.Second,
		c.Self && f.SkipMe:
		return false
	}
	return true
}

// ParseTimeoutMS parses a millisecond timeout as Redis's
// getTimeoutFromObjectOrReply does (CLIENT PAUSE).
func ParseTimeoutMS(arg []byte) (time.Duration, error) {
	n, ok := value.ParseInt(arg)
	if !ok {
		return 0, ErrTimeoutNotInt
	}
	if n < 0 {
		return 0, ErrTimeoutNeg
	}
	return time.Duration(n) * time.Millisecond, nil
}

// ParsePauseMode parses CLIENT PAUSE's optional WRITE|ALL (nil: ALL);
// all is false for WRITE.
func ParsePauseMode(arg []byte) (all bool, err error) {
	write, err := optionalChoice(arg, "all", "write", ErrPauseMode)
	return !write && err == nil, err
}

// ParseUnblockReason parses CLIENT UNBLOCK's optional TIMEOUT|ERROR (nil:
// TIMEOUT); withError is true for ERROR.
func ParseUnblockReason(arg []byte) (withError bool, err error) {
	return optionalChoice(arg, "timeout", "error", ErrUnblockReason)
}

// optionalChoice parses an optional argument that is either dflt (or
// absent) or other, reporting whether it is other; anything else is
// refused with err.
func optionalChoice(arg []byte, dflt, other string, refused error) (bool, error) {
	switch {
	case arg == nil || strings.EqualFold(string(arg), dflt):
		return false, nil
	case strings.EqualFold(string(arg), other):
		return true, nil
	}
	return false, refused
}

// Help is CLIENT HELP's text, without the header and HELP lines every
// container command adds.
var Help = []string{
	"CACHING (YES|NO)",
	"    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
	"GETREDIR",
	"    Return the client ID we are redirecting to when tracking is enabled.",
	"GETNAME",
	"    Return the name of the current connection.",
	"ID",
	"    Return the ID of the current connection.",
	"INFO",
	"    Return information about the current client connection.",
	"KILL <ip:port>",
	"    Kill connection made from <ip:port>.",
	"KILL <option> <value> [<option> <value> [...]]",
	"    Kill connections. Options are:",
	"    * ADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made from the specified address",
	"    * LADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made to specified local address",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Kill connections by type.",
	"    * USER <username>",
	"      Kill connections authenticated by <username>.",
	"    * SKIPME (YES|NO)",
	"      Skip killing current connection (default: yes).",
	"LIST [options ...]",
	"    Return information about client connections. Options:",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Return clients of specified type.",
	"UNPAUSE",
	"    Stop the current client pause, resuming traffic.",
	"PAUSE <timeout> [WRITE|ALL]",
	"    Suspend all, or just write, clients for <timeout> milliseconds.",
	"REPLY (ON|OFF|SKIP)",
	"    Control the replies sent to the current connection.",
	"SETNAME <name>",
	"    Assign the name <name> to the current connection.",
	"UNBLOCK <clientid> [TIMEOUT|ERROR]",
	"    Unblock the specified blocked client.",
	"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
	"         [OPTIN] [OPTOUT] [NOLOOP]",
	"    Control server assisted client side caching.",
	"TRACKINGINFO",
	"    Report tracking status for the current connection.",
	"NO-EVICT (ON|OFF)",
	"    Protect current client connection from eviction.",
}
