//go:build !linux

package netio

import "syscall"

// rxStampsSupported reports whether this platform has receive timestamps
// (see rxstamp_linux.go); elsewhere the Sequencer stays off and waiters are
// ordered by the time their command ran.
const rxStampsSupported = false

func enableRxStamps(uintptr) error { return syscall.ENOTSUP }

type rxStampState struct{ ns int64 }

func (st *rxStampState) recvStamped(fd uintptr, p []byte) (uintptr, syscall.Errno) {
	return 0, syscall.ENOTSUP
}

func (st *rxStampState) peek(int, []byte) (int, int64) { return 0, 0 }

type poller struct{}

func newPoller() (*poller, error)                 { return nil, syscall.ENOTSUP }
func (p *poller) add(int)                         {}
func (p *poller) remove(int)                      {}
func (p *poller) close()                          {}
func (p *poller) readable(dst []int, n int) []int { return dst }
