// Package benchconn is what the benchmark helper commands under scripts/
// share: one plain RESP connection to a server, and a check that the
// benchmark process they follow still runs.
package benchconn

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shardis/shardis/internal/resp"
)

// Conn is one connection to a server.
type Conn struct {
	nc net.Conn
	br *bufio.Reader
}

// Dial connects to addr (5 s timeout).
func Dial(addr string) (*Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("benchconn: %w", err)
	}
	return &Conn{nc: nc, br: bufio.NewReader(nc)}, nil
}

// Do sends one command and returns its reply; an error reply is returned
// as an error. Each call has a minute to complete.
func (c *Conn) Do(args ...string) (resp.Value, error) {
	_ = c.nc.SetDeadline(time.Now().Add(time.Minute))
	if _, err := c.nc.Write(resp.AppendCommandStrings(nil, args...)); err != nil {
		return resp.Value{}, fmt.Errorf("benchconn: %w", err)
	}
	v, err := resp.ReadValue(c.br)
	if err != nil {
		return v, fmt.Errorf("benchconn: %w", err)
	}
	if v.IsError() {
		return v, errors.New(v.Str)
	}
	return v, nil
}

// InfoField returns an integer field of INFO section.
func (c *Conn) InfoField(section, name string) (int64, error) {
	v, err := c.Do("INFO", section)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(v.Str, "\r\n") {
		k, val, ok := strings.Cut(line, ":")
		if ok && k == name {
			return strconv.ParseInt(val, 10, 64)
		}
	}
	return 0, fmt.Errorf("benchconn: no %s in INFO %s", name, section)
}

// Alive reports whether pid runs: a zombie (exited, not yet waited for by
// the script) counts as gone.
func Alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil // no procfs
	}
	_, after, ok := strings.Cut(string(b), ") ")
	return !ok || !strings.HasPrefix(after, "Z")
}
