package node

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/shardis/shardis/internal/node/config"
)

// movedListeners holds, per server, the listeners CONFIG SET port opened
// (the ones Listen opened stay in Server.listeners, closed once moved).
var movedListeners sync.Map // *Server -> *portListeners

type portListeners struct {
	mu    sync.Mutex
	moved bool
	lns   []net.Listener
}

// errPortListen is Redis's text when CONFIG SET port cannot bind.
var errPortListen = errors.New("Unable to listen on this port. Check server logs.")

// applyPort moves a running server to another port, as Redis's CONFIG SET
// port does: it listens on the new port at every bind address first (all
// or nothing), then closes the old listeners; established connections
// stay. Port 0 closes the TCP listeners.
func applyPort(s *Server, v string) error {
	pl, _ := movedListeners.LoadOrStore(s, &portListeners{})
	p := pl.(*portListeners)
	p.mu.Lock()
	defer p.mu.Unlock()
	old := s.listeners
	if p.moved {
		old = p.lns
	}
	if len(old) > 0 {
		if a, ok := old[0].Addr().(*net.TCPAddr); ok && strconv.Itoa(a.Port) == v {
			return nil
		}
	}
	var lns []net.Listener
	if v != "0" {
		for _, b := range strings.Fields(s.cfg.Get(config.DirBind)) {
			b, optional := config.BindHost(b)
			ln, err := net.Listen("tcp", net.JoinHostPort(b, v))
			if err != nil {
				if optional {
					continue
				}
				s.log.Warn("CONFIG SET port: cannot listen", "addr", net.JoinHostPort(b, v), "err", err)
				for _, l := range lns {
					_ = l.Close()
				}
				return errPortListen
			}
			lns = append(lns, ln)
		}
		if len(lns) == 0 {
			return errPortListen
		}
	}
	for _, l := range old {
		_ = l.Close()
	}
	p.lns, p.moved = lns, true
	for _, ln := range lns {
		go s.acceptLoop(ln)
		go func() {
			<-s.shutdownC
			_ = ln.Close()
			movedListeners.Delete(s)
		}()
	}
	return nil
}
