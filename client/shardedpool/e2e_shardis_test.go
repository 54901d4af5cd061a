package shardedpool

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/shardis/shardis/internal/testutil"
)

// TestEndToEndFailoverShardis runs the end-to-end failover scenario against
// shardis's own shardnode and Sentinel instead of redis-server and
// redis-sentinel: it builds both commands and points testutil at them.
func TestEndToEndFailoverShardis(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries and starts processes")
	}
	gobin := testutil.LookPath(t, "go")
	dir := t.TempDir()
	for name, pkg := range map[string]string{"shardnode": "../../cmd/shardnode", "sentinel": "../../cmd/sentinel"} {
		out, err := exec.Command(gobin, "build", "-o", filepath.Join(dir, name), pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	t.Setenv("TESTUTIL_REDIS_SERVER", filepath.Join(dir, "shardnode"))
	t.Setenv("TESTUTIL_REDIS_SENTINEL", filepath.Join(dir, "sentinel"))
	TestEndToEndFailover(t)
}
