package node

import (
	"os/exec"
	"strings"
	"testing"
)

// TestSubpackagesDoNotImportNode: dependencies point one way, from the
// root down. No package under internal/node imports internal/node (or
// anything that does), checked over `go list -deps`.
func TestSubpackagesDoNotImportNode(t *testing.T) {
	const root = "github.com/shardis/shardis/internal/node"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}: {{join .Deps \" \"}}", root+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	subs := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, ": ")
		if !strings.HasPrefix(pkg, root+"/") {
			continue
		}
		subs[strings.TrimPrefix(pkg, root+"/")] = true
		for _, d := range strings.Fields(deps) {
			if d == root {
				t.Errorf("%s depends on %s", pkg, root)
			}
		}
	}
	for _, want := range []string{"keyspace", "value", "persist", "repl", "slotmig", "cluster/push", "config", "clusternode", "gcpace", "nodestats"} {
		if !subs[want] {
			t.Errorf("%s/%s is not in go list's output (found %v)", root, want, subs)
		}
	}
	for _, want := range []string{"keyspace", "value", "netio"} {
		if !strings.Contains(string(out), root+"/"+want+": ") {
			t.Errorf("no package %s/%s", root, want)
		}
	}
}
