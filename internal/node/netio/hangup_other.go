//go:build !linux

package netio

// hangupWatcher exists on linux only (hangup_linux.go); elsewhere a
// hang-up that arrives with the last request is seen at the next read.
type hangupWatcher struct{}

func hangupWatch() *hangupWatcher              { return nil }
func (w *hangupWatcher) watch(c *Conn, fd int) {}
func (w *hangupWatcher) unwatch(c *Conn)       {}
