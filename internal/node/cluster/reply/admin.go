package reply

import (
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
)

// ResultKind says how an admin subcommand's Result is replied.
type ResultKind uint8

const (
	// OK replies +OK.
	OK ResultKind = iota
	// Integer replies Result.Int.
	Integer
	// Strings replies Result.Strings as an array of bulk strings.
	Strings
)

// Result is what an admin subcommand run on the machine replies.
type Result struct {
	Kind    ResultKind
	Int     int64
	Strings []string
}

// Admin is a CLUSTER subcommand that is a machine operation: an argument
// check the node runs before it takes the machine's lock, and the run.
type Admin struct {
	// check validates the arguments after the subcommand name: "" or the
	// error (ErrSubSyntax, or a text).
	check func(args []string) string
	run   func(m *cluster.Machine, now time.Time, args []string) (Result, error)
}

// Check validates the arguments after the subcommand name: "" or the
// error to reply (ErrSubSyntax for addReplySubcommandSyntaxError).
func (a *Admin) Check(args []string) string {
	if a.check == nil {
		return ""
	}
	return a.check(args)
}

// Run runs the subcommand on m (the caller holds the machine's lock). A
// *cluster.Error is replied with its text.
func (a *Admin) Run(m *cluster.Machine, now time.Time, args []string) (Result, error) {
	return a.run(m, now, args)
}

// AdminCommand returns the admin subcommand name (lower case), or nil.
func AdminCommand(name string) *Admin { return admin[name] }

// ok wraps a machine operation replying +OK.
func ok(fn func(m *cluster.Machine, now time.Time, args []string) error) func(*cluster.Machine, time.Time, []string) (Result, error) {
	return func(m *cluster.Machine, now time.Time, args []string) (Result, error) {
		return Result{}, fn(m, now, args)
	}
}

// maxArgs refuses more than n arguments with ErrSubSyntax.
func maxArgs(n int) func([]string) string {
	return func(args []string) string {
		if len(args) > n {
			return ErrSubSyntax
		}
		return ""
	}
}

// pairs wants start end pairs, Redis's arity error for name otherwise.
func pairs(name string) func([]string) string {
	return func(args []string) string {
		if len(args)%2 == 1 {
			return "ERR wrong number of arguments for '" + name + "' command"
		}
		return ""
	}
}

func replicas(m *cluster.Machine, _ time.Time, args []string) (Result, error) {
	lines, err := m.Replicas(args[0], false)
	return Result{Kind: Strings, Strings: lines}, err
}

// admin holds the subcommands by name; arities are checked by the command
// table before.
var admin = map[string]*Admin{
	// MEET ip port [cport]
	"meet": {check: maxArgs(3), run: ok(func(m *cluster.Machine, now time.Time, a []string) error {
		cport := ""
		if len(a) == 3 {
			cport = a[2]
		}
		return m.Meet(now, a[0], a[1], cport)
	})},
	// FORGET node-id
	"forget": {run: ok(func(m *cluster.Machine, now time.Time, a []string) error { return m.Forget(now, a[0]) })},
	// ADDSLOTS slot [slot ...]
	"addslots": {run: ok(func(m *cluster.Machine, now time.Time, a []string) error { return m.AddSlots(now, a...) })},
	// DELSLOTS slot [slot ...]
	"delslots": {run: ok(func(m *cluster.Machine, now time.Time, a []string) error { return m.DelSlots(now, a...) })},
	// ADDSLOTSRANGE start end [start end ...]
	"addslotsrange": {check: pairs("cluster|addslotsrange"), run: ok(func(m *cluster.Machine, now time.Time, a []string) error { return m.AddSlotsRange(now, a...) })},
	// DELSLOTSRANGE start end [start end ...]
	"delslotsrange": {check: pairs("cluster|delslotsrange"), run: ok(func(m *cluster.Machine, now time.Time, a []string) error { return m.DelSlotsRange(now, a...) })},
	// FLUSHSLOTS
	"flushslots": {run: ok(func(m *cluster.Machine, now time.Time, _ []string) error { return m.FlushSlots(now) })},
	// SETSLOT slot IMPORTING|MIGRATING|NODE id | STABLE
	"setslot": {run: ok(func(m *cluster.Machine, now time.Time, a []string) error { return m.SetSlot(now, a[0], a[1], a[2:]...) })},
	// REPLICATE node-id
	"replicate": {run: ok(func(m *cluster.Machine, now time.Time, a []string) error { return m.Replicate(now, a[0]) })},
	// SET-CONFIG-EPOCH epoch
	"set-config-epoch": {run: ok(func(m *cluster.Machine, now time.Time, a []string) error { return m.SetConfigEpoch(now, a[0]) })},
	// SAVECONFIG
	"saveconfig": {run: ok(func(m *cluster.Machine, _ time.Time, _ []string) error { m.SaveConfig(); return nil })},
	// FAILOVER [FORCE|TAKEOVER]: a replica starts a manual failover of
	// its master (the MFSTART handshake, or FORCE without the offset
	// wait, or TAKEOVER without votes).
	"failover": {check: maxArgs(1), run: ok(func(m *cluster.Machine, now time.Time, a []string) error {
		mode := ""
		if len(a) == 1 {
			mode = a[0]
		}
		return m.Failover(now, mode)
	})},
	// COUNT-FAILURE-REPORTS node-id
	"count-failure-reports": {run: func(m *cluster.Machine, now time.Time, a []string) (Result, error) {
		n, err := m.CountFailureReports(now, a[0])
		return Result{Kind: Integer, Int: int64(n)}, err
	}},
	// REPLICAS node-id (SLAVES is its old name)
	"replicas": {run: replicas},
	"slaves":   {run: replicas},
}
