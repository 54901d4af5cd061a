package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Proc is a child process of a [Supervisor].
type Proc struct {
	// Name describes the process ("node 127.0.0.1:7000", "sentinel ...").
	Name string
	// Group orders the shutdown: higher groups stop first.
	Group int
	// LogPath receives the process's stdout and stderr.
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
	err  error // valid once done is closed

	mu       sync.Mutex
	stopping bool
}

// Pid returns the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the exit error once Done is closed (nil for a clean exit).
func (p *Proc) Err() error { return p.err }

func (p *Proc) expected() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopping
}

// Supervisor starts child processes, reports the ones that exit on their
// own, and stops them all in order.
type Supervisor struct {
	mu     sync.Mutex
	procs  []*Proc
	exited chan *Proc
}

// NewSupervisor returns an empty supervisor.
func NewSupervisor() *Supervisor { return &Supervisor{exited: make(chan *Proc, 64)} }

// Exited delivers the processes that exited without being stopped.
func (s *Supervisor) Exited() <-chan *Proc { return s.exited }

// Start runs argv in dir with its output appended to logPath.
func (s *Supervisor) Start(name string, group int, dir, logPath string, argv ...string) (*Proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("deploy: %s: %w", name, err)
	}
	fmt.Fprintf(logf, "--- %s: %s %v\n", time.Now().Format(time.RFC3339), name, argv)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("deploy: start %s: %w", name, err)
	}
	p := &Proc{Name: name, Group: group, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
		if !p.expected() {
			select {
			case s.exited <- p:
			default:
			}
		}
	}()
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	return p, nil
}

// Stop sends SIGTERM to p, waits up to grace for it to exit, then kills
// it.
func (p *Proc) Stop(grace time.Duration) {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// StopAll stops every process, highest group first; the processes of a
// group stop in parallel, each given grace before it is killed.
func (s *Supervisor) StopAll(grace time.Duration) {
	s.mu.Lock()
	procs := append([]*Proc(nil), s.procs...)
	s.mu.Unlock()
	top := 0
	for _, p := range procs {
		top = max(top, p.Group)
	}
	for g := top; g >= 0; g-- {
		var wg sync.WaitGroup
		for _, p := range procs {
			if p.Group == g {
				wg.Add(1)
				go func() { defer wg.Done(); p.Stop(grace) }()
			}
		}
		wg.Wait()
	}
}
