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
	subs := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, ": ")
		if !strings.HasPrefix(pkg, root+"/") {
			continue
		}
		subs++
		for _, d := range strings.Fields(deps) {
			if d == root {
				t.Errorf("%s depends on %s", pkg, root)
			}
		}
	}
	if subs < 2 {
		t.Fatalf("found %d subpackages of %s, want at least keyspace and value", subs, root)
	}
	for _, want := range []string{"keyspace", "value", "netio"} {
		if !strings.Contains(string(out), root+"/"+want+": ") {
			t.Errorf("no package %s/%s", root, want)
		}
	}
}
