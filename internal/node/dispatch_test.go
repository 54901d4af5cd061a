package node

import (
	"slices"
	"testing"
)

// The checks run in processCommand's order: lookup and arity before
// authentication, authentication before the state refusals.
func TestDispatchCheckOrder(t *testing.T) {
	var names []string
	for _, ch := range dispatchChecks {
		names = append(names, ch.name)
	}
	before := func(a, b string) {
		t.Helper()
		i, j := slices.Index(names, a), slices.Index(names, b)
		if i < 0 || j < 0 || i >= j {
			t.Errorf("check %q (at %d) must run before %q (at %d): %v", a, i, b, j, names)
		}
	}
	before("command", "arity")
	before("arity", "protected")
	before("protected", "auth")
	before("auth", "acl")
	before("acl", "cluster-redirect")
	before("cluster-redirect", "oom")
	before("oom", "write-refused")
	before("loading", "multi-queue")
	before("stale-data", "multi-queue")
	if names[len(names)-1] != "multi-queue" {
		t.Errorf("MULTI queueing must be the last check: %v", names)
	}
}

// An unauthenticated client gets the unknown-command and arity errors
// before NOAUTH, as from Redis, and NOAUTH before a state refusal.
func TestDispatchAuthAfterArity(t *testing.T) {
	ts := startServer(t, "requirepass", "pw")
	r := ts.raw(t)
	r.expect("*1\r\n$6\r\nNOSUCH\r\n", "-ERR unknown command 'NOSUCH', with args beginning with: ")
	r.expect("*1\r\n$3\r\nGET\r\n", "-ERR wrong number of arguments for 'get' command")
	r.expect("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "-NOAUTH Authentication required.")
	r.expect("*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n", "+OK")
	r.expect("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "$-1")
}
