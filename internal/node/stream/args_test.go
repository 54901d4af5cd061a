package stream

import (
	"fmt"
	"strings"
	"testing"
)

func split(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

func TestParseAddTrim(t *testing.T) {
	cases := []struct {
		in    string
		xadd  bool
		exact bool
		err   string
		check func(AddTrimArgs) bool
	}{
		{"XADD s * f v", true, false, "", func(o AddTrimArgs) bool { return o.IDPos == 2 && !o.IDGiven }},
		{"XADD s NOMKSTREAM 5-* f v", true, false, "", func(o AddTrimArgs) bool {
			return o.NoMkStream && o.IDGiven && !o.SeqGiven && o.ID == ID{5, 0} && o.IDPos == 3
		}},
		{"XADD s MAXLEN ~ 10 * f v", true, false, "", func(o AddTrimArgs) bool {
			return o.Trim.Strategy == TrimMaxLen && o.Trim.Approx && o.Trim.MaxLen == 10 && o.Trim.Limit == 10000 && o.ArgIdx == 4
		}},
		{"XADD s MAXLEN ~ 10 * f v", true, true, "", func(o AddTrimArgs) bool { return o.Trim.Limit == 0 }},
		{"XADD s MINID = 3-1 LIMIT 5 * f v", true, false, "ERR syntax error, LIMIT cannot be used without the special ~ option", nil},
		{"XADD s MAXLEN 1 MINID 1 * f v", true, false, "ERR syntax error, MAXLEN and MINID options at the same time are not compatible", nil},
		{"XADD s MAXLEN -1 * f v", true, false, "ERR The MAXLEN argument must be >= 0.", nil},
		{"XADD s LIMIT 5 * f v", true, false, "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy", nil},
		{"XADD s * f", true, false, "ERR wrong number of arguments for 'xadd' command", nil},
		{"XADD s 0-0 f v", true, false, "ERR The ID specified in XADD must be greater than 0-0", nil},
		{"XADD s 1-x f v", true, false, ErrInvalidID.Error(), nil},
		{"XTRIM s LIMIT 1", false, false, "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy", nil},
		{"XTRIM s MAXLEN x", false, false, ErrNotInt.Error(), nil},
		{"XTRIM s FOO", false, false, ErrSyntax.Error(), nil},
		{"XTRIM s MINID ~ 5 LIMIT 7", false, false, "", func(o AddTrimArgs) bool {
			return o.Trim.Strategy == TrimMinID && o.Trim.MinID == ID{5, 0} && o.Trim.Limit == 7
		}},
	}
	for _, c := range cases {
		o, err := ParseAddTrim(split(c.in), c.xadd, c.exact, 100)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.err || (err == nil && !c.check(o)) {
			t.Errorf("%s: %+v, %q; want error %q", c.in, o, got, c.err)
		}
	}
}

func TestParseRange(t *testing.T) {
	cases := []struct {
		in         string
		rev        bool
		start, end ID
		count      int64
		err        string
	}{
		{"XRANGE s - +", false, ID{}, MaxID, -1, ""},
		{"XRANGE s (1-1 (5 COUNT 3", false, ID{1, 2}, ID{5, 1<<64 - 2}, 3, ""},
		{"XREVRANGE s + - COUNT -4", true, ID{}, MaxID, 0, ""},
		{"XRANGE s (- +", false, ID{}, ID{}, 0, ErrInvalidID.Error()},
		{"XRANGE s (18446744073709551615-18446744073709551615 +", false, ID{}, ID{}, 0, "ERR invalid start ID for the interval"},
		{"XRANGE s - (0-0", false, ID{}, ID{}, 0, "ERR invalid end ID for the interval"},
		{"XRANGE s - + COUNT", false, ID{}, ID{}, 0, ErrSyntax.Error()},
		{"XRANGE s - + COUNT x", false, ID{}, ID{}, 0, ErrNotInt.Error()},
	}
	for _, c := range cases {
		r, err := ParseRangeArgs(split(c.in), c.rev)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.err || (err == nil && (r.Start != c.start || r.End != c.end || r.Count != c.count)) {
			t.Errorf("%s: %+v %q", c.in, r, got)
		}
	}
}

func TestParseRead(t *testing.T) {
	cases := []struct {
		in     string
		group  bool
		script bool
		err    string
		keys   int
	}{
		{"XREAD COUNT 2 BLOCK 10 STREAMS a b 0 0", false, false, "", 2},
		{"XREAD STREAMS a b 0", false, false, "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.", 0},
		{"XREAD BLOCK -1 STREAMS a 0", false, false, "ERR timeout is negative", 0},
		{"XREAD BLOCK x STREAMS a 0", false, false, "ERR timeout is not an integer or out of range", 0},
		{"XREAD BLOCK 1 STREAMS a 0", false, true, "ERR XREAD command is not allowed with BLOCK option from scripts", 0},
		{"XREAD GROUP g c STREAMS a 0", false, false, "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.", 0},
		{"XREAD NOACK STREAMS a 0", false, false, "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.", 0},
		{"XREADGROUP COUNT 1 STREAMS a >", true, false, "ERR Missing GROUP option for XREADGROUP", 0},
		{"XREADGROUP GROUP g c NOACK STREAMS a >", true, false, "", 1},
		{"XREAD COUNT 1", false, false, ErrSyntax.Error(), 0},
	}
	for _, c := range cases {
		r, err := ParseRead(split(c.in), c.group, c.script, 1000)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.err || (err == nil && len(r.Keys) != c.keys) {
			t.Errorf("%s: %+v %q", c.in, r, got)
		}
	}
	r, _ := ParseRead(split("XREADGROUP GROUP g c BLOCK 5 COUNT 3 NOACK STREAMS a >"), true, false, 1000)
	if r.Timeout != 1005 || r.Count != 3 || !r.NoAck || string(r.Group) != "g" || string(r.Consumer) != "c" || string(r.IDArgs[0]) != ">" {
		t.Errorf("XREADGROUP options: %+v", r)
	}
	s := New()
	s.Append(split("f v"), ID{7, 1}, true, true, 0, DefaultLimits)
	for _, c := range []struct {
		arg   string
		group bool
		want  ID
		err   bool
	}{{"$", false, ID{7, 1}, false}, {"$", true, ID{}, true}, {">", true, MaxID, false}, {">", false, ID{}, true}, {"3", false, ID{3, 0}, false}} {
		id, err := ReadID([]byte(c.arg), c.group, s)
		if (err != nil) != c.err || id != c.want {
			t.Errorf("ReadID(%s, %v) = %v %v", c.arg, c.group, id, err)
		}
	}
}

func TestParseClaim(t *testing.T) {
	a, err := ParseClaim(split("XCLAIM s g c 10 1-1 2-2 IDLE 30 RETRYCOUNT 4 FORCE JUSTID LASTID 9-9"), 100)
	if err != nil || a.MinIdle != 10 || len(a.IDs) != 2 || a.Delivery != 70 || a.Retry != 4 || !a.Force || !a.JustID || a.LastID != (ID{9, 9}) {
		t.Fatalf("ParseClaim: %+v %v", a, err)
	}
	if a, _ := ParseClaim(split("XCLAIM s g c -5 1 TIME 500"), 100); a.MinIdle != 0 || a.Delivery != 100 {
		t.Errorf("TIME in the future is now, min-idle at least 0: %+v", a)
	}
	for in, want := range map[string]string{
		"XCLAIM s g c x 1":          "ERR Invalid min-idle-time argument for XCLAIM",
		"XCLAIM s g c 0 1 IDLE x":   "ERR Invalid IDLE option argument for XCLAIM",
		"XCLAIM s g c 0 1 TIME":     "ERR Unrecognized XCLAIM option 'TIME'",
		"XCLAIM s g c 0 1 FOO 1":    "ERR Unrecognized XCLAIM option 'FOO'",
		"XCLAIM s g c 0 1 LASTID -": ErrInvalidID.Error(),
	} {
		if _, err := ParseClaim(split(in), 100); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	for in, want := range map[string]string{
		"XAUTOCLAIM s g c x 0":         "ERR Invalid min-idle-time argument for XAUTOCLAIM",
		"XAUTOCLAIM s g c 0 0 COUNT 0": "ERR COUNT must be > 0",
		"XAUTOCLAIM s g c 0 0 FOO":     ErrSyntax.Error(),
	} {
		if _, err := ParseAutoClaim(split(in)); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	for in, want := range map[string]string{
		"XPENDING s g - +":             ErrSyntax.Error(),
		"XPENDING s g IDLE x - + 1":    ErrNotInt.Error(),
		"XPENDING s g IDLE 5 - +":      ErrSyntax.Error(),
		"XPENDING s g - + x":           ErrNotInt.Error(),
		"XPENDING s g (- + 1 consumer": ErrInvalidID.Error(),
	} {
		if _, err := ParsePending(split(in)); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

// TestClaimAndAutoClaim claims on a PEL: entries deleted meanwhile are
// dropped and logged, idle ones move to the claiming consumer.
func TestClaimAndAutoClaim(t *testing.T) {
	s := New()
	for ms := uint64(1); ms <= 4; ms++ {
		s.Append(split("f v"), ID{ms, 0}, true, true, 0, DefaultLimits)
	}
	g := s.CreateGroup("g", ID{}, 0)
	alice, _ := g.Touch([]byte("alice"), 0)
	s.ReadNew(ID{}, 0, &GroupRead{Group: g, Consumer: alice}, 10)
	s.Delete([]ID{{2, 0}})
	log := &Log{Key: []byte("s"), Group: []byte("g")}
	res := s.AutoClaim(g, []byte("bob"), AutoClaimArgs{MinIdle: 5, Count: 2}, 100, log)
	if len(res.Entries) != 1 || res.Entries[0].ID != (ID{1, 0}) || len(res.Deleted) != 1 || res.Deleted[0] != (ID{2, 0}) || res.Next != (ID{3, 0}) || !res.Created {
		t.Fatalf("AutoClaim: %+v", res)
	}
	if len(log.Cmds) != 2 || string(log.Cmds[0][3]) != "bob" || string(log.Cmds[1][5]) != "2-0" {
		t.Errorf("log: %q", log.Cmds)
	}
	res = s.Claim(g, []byte("bob"), ClaimArgs{IDs: []ID{{3, 0}, {9, 0}}, Delivery: 100, Retry: -1, LastID: ID{9, 0}}, 100, nil)
	if len(res.Entries) != 1 || res.Created || g.Consumer("bob").PendingCount() != 2 || g.LastID != (ID{9, 0}) {
		t.Errorf("Claim: %+v", res)
	}
	sum := g.PendingReply(PendingArgs{Summary: true}, 100).([]any)
	if sum[0] != int64(3) || sum[1] != (ID{1, 0}) || sum[2] != (ID{4, 0}) {
		t.Errorf("XPENDING summary: %v", sum)
	}
}

func TestParseSetIDAndGroup(t *testing.T) {
	s := New()
	s.Append(split("f v"), ID{5, 0}, true, true, 0, DefaultLimits)
	a, err := ParseSetID(split("XSETID s 9-0 ENTRIESADDED 3 MAXDELETEDID 2-0"))
	if err != nil || s.SetID(a) != nil || s.LastID != (ID{9, 0}) || s.EntriesAdded != 3 || s.MaxDeletedID != (ID{2, 0}) {
		t.Fatalf("XSETID: %+v %v", a, err)
	}
	a, _ = ParseSetID(split("XSETID s 4-0"))
	if err := s.SetID(a); err == nil || !strings.Contains(err.Error(), "smaller than the target stream top item") {
		t.Errorf("XSETID below the top: %v", err)
	}
	if _, err := ParseSetID(split("XSETID s 1-0 MAXDELETEDID 2-0")); err != errSetIDMaxDel {
		t.Errorf("XSETID below max deleted: %v", err)
	}
	if _, err := ParseGroupOptions([]byte("setid"), split("MKSTREAM")); err != ErrSubcommandSyntax {
		t.Errorf("SETID MKSTREAM: %v", err)
	}
	if ga, err := ParseGroupOptions([]byte("CREATE"), split("MKSTREAM ENTRIESREAD 4")); err != nil || !ga.MkStream || ga.EntriesRead != 4 {
		t.Errorf("CREATE options: %+v %v", ga, err)
	}
	if id, _ := GroupID([]byte("$"), nil, true); id != (ID{}) {
		t.Errorf("$ of a missing stream: %v", id)
	}
}

func TestInfoShapes(t *testing.T) {
	s := New()
	s.Append(split("f v"), ID{1, 0}, true, true, 0, DefaultLimits)
	g := s.CreateGroup("g", ID{}, InvalidEntriesRead)
	c, _ := g.Touch([]byte("c"), 5)
	s.ReadNew(ID{}, 0, &GroupRead{Group: g, Consumer: c}, 7)
	if m := s.InfoStream(false, 10); len(m) != 10 || m[8].Key != "first-entry" || m[8].Value.(Entry).ID != (ID{1, 0}) {
		t.Errorf("XINFO STREAM: %+v", m)
	}
	m := s.InfoStream(true, 10)
	if len(m) != 9 || m[8].Key != "groups" {
		t.Fatalf("XINFO STREAM FULL: %+v", m)
	}
	gm := m[8].Value.([]any)[0].(Map)
	if gm[5].Key != "pending" || len(gm[5].Value.([]any)) != 1 || gm[2].Value != int64(1) {
		t.Errorf("FULL group: %+v", gm)
	}
	if full, count, err := ParseInfoStream(split("FULL COUNT -3")); !full || count != 10 || err != nil {
		t.Errorf("FULL COUNT -3: %v %v %v", full, count, err)
	}
	if _, _, err := ParseInfoStream(split("FULL 3")); err != ErrSubcommandSyntax {
		t.Errorf("FULL 3: %v", err)
	}
	if cons := g.InfoConsumers(12); cons[0].(Map)[2].Value != int64(7) {
		t.Errorf("XINFO CONSUMERS idle: %+v", cons)
	}
}

// FuzzParse runs the grammars on arbitrary arguments: they must not
// panic, and an XADD they accept has an even number of fields after the
// ID.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"XADD s MAXLEN ~ 1 LIMIT 2 * f v", "XREADGROUP GROUP g c STREAMS a >", "XCLAIM s g c 1 1-1 IDLE 3", "XPENDING s g IDLE 1 - + 3 c", "XAUTOCLAIM s g c 1 0 COUNT 3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		args := split(in)
		if len(args) < 6 {
			return
		}
		if o, err := ParseAddTrim(args, true, false, 100); err == nil && (len(args)-o.IDPos-1)%2 != 0 {
			t.Fatalf("%q: fields after %d", in, o.IDPos)
		}
		ParseAddTrim(args, false, false, 100)
		ParseRead(args, true, false, 0)
		ParseClaim(args, 0)
		ParseAutoClaim(args)
		ParsePending(args)
		ParseSetID(args)
		ParseRangeArgs(args, true)
	})
}

func TestXGroup(t *testing.T) {
	run := func(s *Stream, in string) (GroupOutcome, error) {
		a := split(in)
		ga, err := ParseGroupOptions(a[1], a[min(5, len(a)):])
		if err != nil {
			return GroupOutcome{}, err
		}
		return XGroup(a, s, ga, 10)
	}
	if _, err := run(nil, "XGROUP CREATE s g $"); err == nil || !strings.Contains(err.Error(), "requires the key to exist") {
		t.Errorf("CREATE on a missing key: %v", err)
	}
	out, err := run(nil, "XGROUP CREATE s g $ MKSTREAM")
	if err != nil || out.Created == nil || !out.OK || out.Event != "xgroup-create" {
		t.Fatalf("CREATE MKSTREAM: %+v %v", out, err)
	}
	s := out.Created
	if _, err := run(s, "XGROUP CREATE s g 0"); err == nil || err.Error() != "BUSYGROUP Consumer Group name already exists" {
		t.Errorf("CREATE twice: %v", err)
	}
	if _, err := run(s, "XGROUP SETID s nope 0"); err == nil || err.Error() != "NOGROUP No such consumer group 'nope' for key name 's'" {
		t.Errorf("SETID of a missing group: %v", err)
	}
	if out, _ := run(s, "XGROUP CREATECONSUMER s g c"); out.Int != 1 || s.Group("g").Consumer("c") == nil {
		t.Errorf("CREATECONSUMER: %+v", out)
	}
	if out, _ := run(s, "XGROUP DELCONSUMER s g c"); out.Event != "xgroup-delconsumer" {
		t.Errorf("DELCONSUMER: %+v", out)
	}
	if out, _ := run(s, "XGROUP DESTROY s g"); out.Int != 1 || !out.Wake || s.Group("g") != nil {
		t.Errorf("DESTROY: %+v", out)
	}
	if out, err := run(s, "XGROUP DESTROY s g"); out.Int != 0 || out.Event != "" || err != nil {
		t.Errorf("DESTROY again: %+v %v", out, err)
	}
	if _, err := run(s, "XGROUP DESTROY s g extra"); err != ErrSubcommandSyntax {
		t.Errorf("DESTROY with an extra argument: %v", err)
	}
}

func TestReadKeys(t *testing.T) {
	for in, want := range map[string]string{
		"XREAD COUNT 1 BLOCK 0 STREAMS a b 0 0":  "[6 7]",
		"XREADGROUP GROUP streams c STREAMS a >": "[5]",
		"XREAD STREAMS a b c":                    "[2]",
		"XREAD COUNT 1":                          "[]",
	} {
		if got := fmt.Sprint(ReadKeys(split(in))); got != want {
			t.Errorf("ReadKeys(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestReadMayBlock: ReadMayBlock says a call blocks exactly when
// ParseRead finds a BLOCK option, whatever the group, consumer, count and
// keys are called.
func TestReadMayBlock(t *testing.T) {
	for _, c := range []struct {
		in    string
		group bool
		want  bool
	}{
		{"XREAD COUNT 1 BLOCK 0 STREAMS a b 0 0", false, true},
		{"XREAD STREAMS block 0", false, false},
		{"XREAD STREAMS a block", false, false},
		{"XREAD COUNT 5 STREAMS block 0", false, false},
		{"XREAD BLOCK 10 STREAMS a $", false, true},
		{"XREADGROUP GROUP block block COUNT 10 STREAMS a >", true, false},
		{"XREADGROUP GROUP streams c STREAMS a >", true, false},
		{"XREADGROUP GROUP g streams BLOCK 1 STREAMS a >", true, true},
		{"XREADGROUP GROUP g c NOACK COUNT 3 STREAMS a >", true, false},
		{"XREADGROUP GROUP g c NOACK block 0 STREAMS a >", true, true},
		{"XREADGROUP GROUP g c STREAMS a b > > BLOCK 0", true, false},
	} {
		args := split(c.in)
		got := ReadMayBlock(args)
		r, err := ParseRead(args, c.group, false, 1000)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got != c.want || got != (r.Timeout != -1) {
			t.Errorf("ReadMayBlock(%s) = %v, want %v (ParseRead's timeout %d)", c.in, got, c.want, r.Timeout)
		}
	}
	// Calls ParseRead refuses never block; BLOCK before the error is
	// reported as a call that may.
	for in, want := range map[string]bool{"XREAD COUNT 1": false, "XREAD BLOCK": false, "XREAD FOO BLOCK 0 STREAMS a 0": false, "XREAD BLOCK 0 FOO STREAMS a 0": true, "XREAD COUNT block STREAMS a 0": false} {
		if got := ReadMayBlock(split(in)); got != want {
			t.Errorf("ReadMayBlock(%s) = %v, want %v", in, got, want)
		}
	}
}

func TestAckAllAndNilLen(t *testing.T) {
	var missing *Stream
	if missing.Len() != 0 {
		t.Error("a missing stream has entries")
	}
	s := New()
	s.Append(split("f v"), ID{1, 0}, true, true, 0, DefaultLimits)
	s.Append(split("f v"), ID{2, 0}, true, true, 0, DefaultLimits)
	g := s.CreateGroup("g", ID{}, 0)
	c, _ := g.Touch([]byte("c"), 0)
	s.ReadNew(ID{}, 0, &GroupRead{Group: g, Consumer: c}, 1)
	if n := g.AckAll([]ID{{1, 0}, {1, 0}, {3, 0}}); n != 1 || g.PendingCount() != 1 || c.PendingCount() != 1 {
		t.Errorf("AckAll: %d, PEL %d, consumer %d", n, g.PendingCount(), c.PendingCount())
	}
}
