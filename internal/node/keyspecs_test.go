package node

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardis/shardis/internal/commands"
)

// TestKeyPositionsMatchKeySpecs checks the node's command table against
// the shared one: for every call in the compatibility corpus of a command
// Redis 7.0 has, the key positions the dispatcher locks and propagates by
// (the rows' first/last/step or key finder) are those Redis's key specs
// give (internal/commands, which client/shardedpool routes by).
func TestKeyPositionsMatchKeySpecs(t *testing.T) {
	tab := newCommandTable()
	files, _ := filepath.Glob("testdata/compat/*.txt")
	if len(files) == 0 {
		t.Fatal("no corpus in testdata/compat")
	}
	checked := 0
	for _, f := range files {
		for _, l := range loadCorpus(t, f) {
			cmd := tab.lookup(l.args[0])
			if cmd != nil && len(cmd.subs) > 0 && len(l.args) > 1 {
				cmd = cmd.subs[strings.ToLower(string(l.args[1]))]
			}
			if cmd == nil || len(cmd.subs) > 0 || !arityOK(cmd, len(l.args)) {
				continue
			}
			want, known := commands.KeyPositions(l.args)
			if !known || notKeyOnly(l.args) {
				continue
			}
			got := cmd.keyPositions(l.args)
			if fmt.Sprint(got) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("%s:%d %q: node keys at %v, key specs at %v", filepath.Base(f), l.no, l.text, got, want)
			}
			checked++
		}
	}
	if checked < 500 {
		t.Fatalf("only %d calls checked", checked)
	}
	t.Logf("%d calls checked", checked)
}
