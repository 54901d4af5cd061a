package node

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestDebugReplicate: DEBUG REPLICATE feeds its command to the replicas
// without running it and without handing it to the other propagators
// (the AOF's place), in order with the writes around it; with
// enable-debug-command off (the default) DEBUG is refused.
func TestDebugReplicate(t *testing.T) {
	ts := startServer(t, "enable-debug-command", "yes")
	other := &propRecorder{}
	ts.srv.AddPropagator(other)
	repl, stream := fakeReplicaConn(t, ts.addr)
	c := ts.raw(t)
	// The replica is online once a write reaches it.
	deadline := time.Now().Add(10 * time.Second)
	for !bytes.Contains(stream, []byte("ready")) {
		if time.Now().After(deadline) {
			t.Fatal("stream never reached the fake replica")
		}
		c.expect("SET k ready\r\n", "+OK")
		time.Sleep(10 * time.Millisecond)
		stream = readNow(t, repl, stream)
	}
	stream = stream[:0]
	c.expect("DEBUG REPLICATE fake-command-1 a b\r\n", "+OK")
	c.expect("SET k after\r\n", "+OK")
	want := respCmd("fake-command-1", "a", "b") + respCmd("SET", "k", "after")
	for !bytes.Contains(stream, []byte(want)) {
		if time.Now().After(deadline) {
			t.Fatalf("replica stream %q, want it to hold %q", stream, want)
		}
		time.Sleep(10 * time.Millisecond)
		stream = readNow(t, repl, stream)
	}
	if !other.has("0 SET k after") {
		t.Fatalf("the other propagator missed SET: %q", other.cmds)
	}
	for _, cmd := range other.cmds {
		if strings.Contains(cmd, "fake-command-1") {
			t.Fatalf("DEBUG REPLICATE reached a propagator other than the replicas: %q", other.cmds)
		}
	}
	c.expect("DEBUG REPLICATE\r\n", "-ERR unknown subcommand or wrong number of arguments for 'REPLICATE'. Try DEBUG HELP.")
	c.expect("GET k\r\n", "$5")

	off := startServer(t)
	oc := off.raw(t)
	oc.expect("DEBUG REPLICATE fake-command-1\r\n", "-ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.")
}
