package config

import (
	"errors"
	"reflect"
	"testing"
)

// recorder is an Applier that records its calls and fails ApplyErr for
// one directive and value.
type recorder struct {
	calls   []string
	failDir Directive
	failVal string
}

func (r *recorder) ApplyErr(d Directive, v string) error {
	r.calls = append(r.calls, "applyErr "+d.String()+" "+v)
	if d == r.failDir && v == r.failVal {
		return errors.New("Unable to listen on this port. Check server logs.")
	}
	return nil
}

func (r *recorder) Apply(d Directive, v string) { r.calls = append(r.calls, "apply "+d.String()+" "+v) }

func args(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, a := range s {
		out[i] = []byte(a)
	}
	return out
}

func TestSetCommand(t *testing.T) {
	allow := func(string) bool { return false }
	for _, c := range []struct {
		pairs []string
		err   string
	}{
		{[]string{"maxmemory"}, "ERR wrong number of arguments for 'config|set' command"},
		{[]string{"nosuch", "1"}, "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'"},
		{[]string{"databases", "2"}, "ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config"},
		{[]string{"dir", "/tmp"}, "ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected config"},
		{[]string{"maxmemory", "1", "MAXMEMORY", "2"}, "ERR CONFIG SET failed (possibly related to argument 'MAXMEMORY') - duplicate parameter"},
		{[]string{"maxmemory", "1", "hz", "x"}, "ERR CONFIG SET failed (possibly related to argument 'hz') - argument couldn't be parsed into an integer"},
	} {
		cfg := New()
		r := &recorder{}
		err := cfg.SetCommand(args(c.pairs...), allow, r)
		if err == nil || err.Error() != c.err {
			t.Errorf("%q: %v, want %s", c.pairs, err, c.err)
		}
		if cfg.Get(DirMaxmemory) != "0" || len(r.calls) != 0 {
			t.Errorf("%q: maxmemory %s, calls %q after a refusal", c.pairs, cfg.Get(DirMaxmemory), r.calls)
		}
	}

	// A failing ApplyErr restores every value and undoes the applies done.
	cfg := New()
	r := &recorder{failDir: DirPort, failVal: "7000"}
	err := cfg.SetCommand(args("maxclients", "5", "slave-announce-port", "1kb", "port", "7000"), allow, r)
	if err == nil || err.Error() != "ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. Check server logs." {
		t.Fatalf("failing apply: %v", err)
	}
	if cfg.Get(DirPort) != "6379" || cfg.Get(DirMaxclients) != "10000" || cfg.Get(DirReplicaAnnouncePort) != "0" {
		t.Fatalf("not restored: %s %s %s", cfg.Get(DirPort), cfg.Get(DirMaxclients), cfg.Get(DirReplicaAnnouncePort))
	}
	want := []string{"applyErr maxclients 5", "applyErr replica-announce-port 1024", "applyErr port 7000", "applyErr maxclients 10000", "applyErr replica-announce-port 0"}
	if !reflect.DeepEqual(r.calls, want) {
		t.Fatalf("calls %q, want %q", r.calls, want)
	}

	// Success: ApplyErr for the changed values, Apply for every one.
	r = &recorder{}
	if err := cfg.SetCommand(args("maxclients", "10000", "hz", "20"), func(string) bool { return true }, r); err != nil {
		t.Fatal(err)
	}
	want = []string{"applyErr hz 20", "apply maxclients 10000", "apply hz 20"}
	if !reflect.DeepEqual(r.calls, want) || cfg.Int(DirHz) != 20 {
		t.Fatalf("calls %q, want %q (hz %d)", r.calls, want, cfg.Int(DirHz))
	}
}

func TestGetCommand(t *testing.T) {
	cfg := New()
	got := cfg.GetCommand(args("SLAVE-READ-ONLY", "key-load-delay", "*-read-only", "nosuch"))
	want := []string{"slave-read-only", "yes", "key-load-delay", "0", "replica-read-only", "yes"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GetCommand = %q, want %q", got, want)
	}
	all := cfg.GetCommand(args("*"))
	if len(all) < 2*100 {
		t.Fatalf("* lists %d names", len(all)/2)
	}
	for i := 0; i < len(all); i += 2 {
		if all[i] == "key-load-delay" || all[i] == "metrics-addr" {
			t.Fatalf("hidden %s listed by *", all[i])
		}
	}
}
