//go:build !linux

package deploy

import "syscall"

// sysProcAttr: outside Linux there is no parent-death signal, so children
// of a killed "up" keep running, and Ctrl-C reaches them directly.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// lockDir is a no-op outside Linux.
func lockDir(dir string) (func(), error) { return func() {}, nil }
