package faults

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Proc is a process started inside a host's namespace with
// `ip netns exec` (which execs the program in place, so the pid is the
// program's own and signals reach it directly).
type Proc struct {
	// Host is the namespace's host name; Name says what the process is.
	Host, Name string
	cmd        *exec.Cmd
	done       chan struct{}
}

// StartProc starts argv in host's namespace with stdout and stderr sent
// to logPath.
func StartProc(host, name, logPath string, argv ...string) (*Proc, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("faults: %w", err)
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns(host)}, argv...)...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("faults: start %s on %s: %w", name, host, err)
	}
	p := &Proc{Host: host, Name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(p.done)
	}()
	return p, nil
}

// Signal sends sig to the process.
func (p *Proc) Signal(sig syscall.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("faults: signal %s on %s: %w", p.Name, p.Host, err)
	}
	return nil
}

// Kill9 sends SIGKILL and waits (up to 5 s) for the process to be reaped.
func (p *Proc) Kill9() error {
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	return p.Wait(5 * time.Second)
}

// Wait waits up to d for the process to exit.
func (p *Proc) Wait(d time.Duration) error {
	select {
	case <-p.done:
		return nil
	case <-time.After(d):
		return fmt.Errorf("faults: %s on %s still running after %s", p.Name, p.Host, d)
	}
}

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ExitErr returns the process's exit state once it has exited.
func (p *Proc) ExitErr() error {
	if !p.Exited() {
		return nil
	}
	if p.cmd.ProcessState != nil && !p.cmd.ProcessState.Success() {
		return fmt.Errorf("faults: %s on %s: %s", p.Name, p.Host, p.cmd.ProcessState)
	}
	return nil
}
