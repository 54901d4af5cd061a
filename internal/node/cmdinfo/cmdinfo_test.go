package cmdinfo

import (
	"bufio"
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/shardis/shardis/internal/resp"
)

func bs(s string) [][]byte { return bytes.Fields([]byte(s)) }

func TestFlagsAndCategories(t *testing.T) {
	tr := Traits{Write: true, DenyOOM: true, Fast: true, Movable: true, AllowBusy: true, NoMulti: true}
	if got, want := tr.Flags(), []string{"write", "denyoom", "fast", "no_multi", "movablekeys", "allow_busy"}; !reflect.DeepEqual(got, want) {
		t.Errorf("flags %v, want %v", got, want)
	}
	for _, tt := range []struct {
		name, group string
		t           Traits
		want        string
	}{
		{"get", "string", Traits{ReadOnly: true, Fast: true}, "@read @string @fast"},
		{"nosuch-cmd", "hash", Traits{Write: true}, "@write @hash @slow"},
		{"nosuch-cmd", "server", Traits{Admin: true}, "@admin @slow @dangerous"},
		{"nosuch-cmd", "scripting", Traits{ReadOnly: true}, "@slow @scripting"}, // scripting is never @read
		{"nosuch-cmd", "list", Traits{Blocking: true, Write: true}, "@write @list @slow @blocking"},
	} {
		if got := strings.Join(Categories(tt.name, tt.group, tt.t), " "); got != tt.want {
			t.Errorf("%s/%s: %q, want %q", tt.name, tt.group, got, tt.want)
		}
	}
}

func TestKeyArgFlags(t *testing.T) {
	for _, tt := range []struct {
		name  string
		write bool
		args  string
		p     int
		want  string
	}{
		{"set", true, "set k v", 1, "OW update"},
		{"set", true, "set k v GET", 1, "RW access update"},
		{"bitfield", true, "bitfield k GET u8 0", 1, "RO access"},
		{"bitfield", true, "bitfield k SET u8 0 1", 1, "RW access update"},
		{"get", false, "get k", 1, "RO access"},
		{"sort", true, "sort k STORE d", 3, "OW update"},
		{"no-such", true, "no-such k", 1, "RW update"},
		{"no-such", false, "no-such k", 1, "RO access"},
	} {
		if got := KeyArgFlags(tt.name, tt.write, bs(tt.args), tt.p); got != tt.want {
			t.Errorf("%s %d: %q, want %q", tt.args, tt.p, got, tt.want)
		}
	}
}

func read(t *testing.T, b []byte) resp.Value {
	t.Helper()
	v, err := resp.ReadValue(bufio.NewReader(bytes.NewReader(b)))
	if err != nil {
		t.Fatalf("reply does not parse: %v (%q)", err, b)
	}
	return v
}

func TestAppendInfoAndDocs(t *testing.T) {
	sub := &Command{Name: "mycmd|sub", Arity: 2, Traits: Traits{Loading: true}, Group: "server"}
	c := &Command{Name: "mycmd", Arity: -2, First: 1, Last: -1, Step: 1, Group: "hash", Since: "1.0.0",
		Traits: Traits{Write: true}, Container: true, Subs: []*Command{sub}}
	for _, proto := range []int{2, 3} {
		v := read(t, AppendInfo(nil, proto, c))
		if len(v.Elems) != 10 || v.Elems[0].Str != "mycmd" || v.Elems[1].Int != -2 || v.Elems[4].Int != -1 {
			t.Fatalf("RESP%d info: %+v", proto, v)
		}
		spec := v.Elems[8].Elems[0] // derived: flags, begin_search index 1, find_keys range -1
		if len(v.Elems[8].Elems) != 1 || spec.Elems[1].Elems[0].Str != "RW" {
			t.Fatalf("RESP%d key spec: %+v", proto, v.Elems[8])
		}
		if subs := v.Elems[9].Elems; len(subs) != 1 || subs[0].Elems[0].Str != "mycmd|sub" || subs[0].Elems[3].Int != 0 {
			t.Fatalf("RESP%d subcommands: %+v", proto, v.Elems[9])
		}
		d := read(t, AppendDocs(nil, proto, c))
		if len(d.Elems) != 6 || d.Elems[0].Str != "since" || d.Elems[3].Str != "hash" || d.Elems[4].Str != "subcommands" {
			t.Fatalf("RESP%d docs: %+v", proto, d)
		}
	}
	if v := read(t, AppendInfo(nil, 2, nil)); !v.Null {
		t.Fatalf("nil command: %+v", v)
	}
	if v := read(t, AppendInfo(nil, 3, &Command{Name: "get"})); len(v.Elems[8].Elems) != 1 {
		t.Fatalf("get's declared key spec missing: %+v", v.Elems[8])
	}
}

func TestParseList(t *testing.T) {
	get := &Command{Name: "get", Group: "string", Traits: Traits{ReadOnly: true, Fast: true}}
	cfg := &Command{Name: "config|get", Group: "server", Traits: Traits{Admin: true}}
	for _, tt := range []struct {
		args         string
		err          bool
		getOK, cfgOK bool
	}{
		{"", false, true, true},
		{"FILTERBY PATTERN c*", false, false, true},
		{"filterby aclcat DANGEROUS", false, false, true},
		{"FILTERBY module x", false, false, false},
		{"FILTERBY foo x", true, false, false},
		{"FILTERBY pattern", true, false, false},
		{"FILTERBY pattern a b", true, false, false},
	} {
		f, err := ParseList(bs(tt.args))
		if (err != nil) != tt.err {
			t.Errorf("%q: err %v", tt.args, err)
			continue
		}
		if err == nil && (f.Match(get) != tt.getOK || f.Match(cfg) != tt.cfgOK) {
			t.Errorf("%q: get %v config|get %v", tt.args, f.Match(get), f.Match(cfg))
		}
	}
}
