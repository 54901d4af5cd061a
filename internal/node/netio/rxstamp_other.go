//go:build !linux

package node

import "syscall"

// rxStampsSupported reports whether this platform has receive timestamps
// (see conn_rxstamp_linux.go); elsewhere waiters are ordered by the time
// their command ran.
const rxStampsSupported = false

func enableRxStamps(uintptr) error { return syscall.ENOTSUP }

type rxStampState struct{ ns int64 }

func (st *rxStampState) recvStamped(fd uintptr, p []byte) (uintptr, syscall.Errno) {
	return 0, syscall.ENOTSUP
}

func (st *rxStampState) peek(int, []byte) (int, int64) { return 0, 0 }

type readyPoller struct{}

func newReadyPoller() (*readyPoller, error)     { return nil, syscall.ENOTSUP }
func (p *readyPoller) add(int)                  {}
func (p *readyPoller) remove(int)               {}
func (p *readyPoller) close()                   {}
func (p *readyPoller) readable(dst []int) []int { return dst }
