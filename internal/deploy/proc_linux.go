package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// sysProcAttr puts a child in its own process group (Ctrl-C in the
// terminal reaches only "up", which stops the children in order) and has
// the kernel send it SIGTERM if "up" dies without stopping it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// lockDir takes an exclusive lock on <dir>/up.lock so two "up" cannot run
// on the same deployment. The lock is released when the process exits.
func lockDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, "up.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("deploy: another \"shardnode up\" is running on %s", dir)
	}
	return func() { f.Close() }, nil
}
