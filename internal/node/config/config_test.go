package config

import "testing"

func TestDefaultIOThreads(t *testing.T) {
	for _, c := range []struct{ cpus, want int }{{1, 1}, {2, 1}, {3, 2}, {8, 7}, {200, 128}} {
		if got := defaultIOThreads(c.cpus); got != c.want {
			t.Errorf("defaultIOThreads(%d) = %d, want %d", c.cpus, got, c.want)
		}
	}
}

// TestDirectivesGenerated: directives_gen.go has one constant per row of
// the directive table and no other (a row added without go generate
// panics at start-up in defConfig; a row removed leaves a constant this
// test finds), and every constant reads its row's value.
func TestDirectivesGenerated(t *testing.T) {
	if len(configDefs) != int(numDirectives) {
		t.Fatalf("%d rows in the table, %d generated directives: run go generate ./internal/node/config", len(configDefs), numDirectives)
	}
	cfg := New()
	for d := Directive(0); d < numDirectives; d++ {
		def := configDefs[d.String()]
		if def == nil || def.id != d {
			t.Fatalf("directive %d (%q) has no row of its own: run go generate ./internal/node/config", d, d.String())
		}
		if got := cfg.Get(d); got != def.def {
			t.Errorf("Get(%s) = %q, want the default %q", d, got, def.def)
		}
	}
	if err := cfg.Set("slave-priority", "7"); err != nil {
		t.Fatal(err)
	}
	if cfg.Int(DirReplicaPriority) != 7 || cfg.Get(DirReplicaPriority) != "7" {
		t.Fatalf("alias set: Int %d Get %q", cfg.Int(DirReplicaPriority), cfg.Get(DirReplicaPriority))
	}
	if cfg.Get(numDirectives) != "" || cfg.Int(numDirectives) != 0 {
		t.Fatal("out-of-range directive reads a value")
	}
}
