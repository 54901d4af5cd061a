package shardedpool

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// parseTopology parses a topology file: "<name> <host:port>" per line.
func parseTopology(data []byte) ([]StaticShard, error) {
	var shards []StaticShard
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: want \"<name> <host:port>\", got %q", n, line)
		}
		if _, port, err := net.SplitHostPort(f[1]); err != nil || !validPort(port) {
			return nil, fmt.Errorf("line %d: bad address %q", n, f[1])
		}
		if seen[f[0]] {
			return nil, fmt.Errorf("line %d: shard %q listed twice", n, f[0])
		}
		seen[f[0]] = true
		shards = append(shards, StaticShard{Name: f[0], Addr: f[1]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(shards) == 0 {
		return nil, fmt.Errorf("no shards")
	}
	return shards, nil
}

// readTopology reads and parses the file; with order (MasterNames) the
// shards are returned in that order and must be exactly those names.
func readTopology(path string, order []string) ([]StaticShard, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("shardedpool: topology file: %w", err)
	}
	shards, err := parseTopology(data)
	if err != nil {
		return nil, fmt.Errorf("shardedpool: topology file %s: %w", path, err)
	}
	if len(order) == 0 {
		return shards, nil
	}
	byName := map[string]StaticShard{}
	for _, s := range shards {
		byName[s.Name] = s
	}
	if len(byName) != len(order) {
		return nil, fmt.Errorf("shardedpool: topology file %s has %d shards, MasterNames %d", path, len(byName), len(order))
	}
	out := make([]StaticShard, len(order))
	for i, n := range order {
		s, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("shardedpool: topology file %s lacks shard %q", path, n)
		}
		out[i] = s
	}
	return out, nil
}

// watchTopology starts watching the topology file's directory (editors
// often replace the file by renaming a new one over it).
func (p *Pool) watchTopology() error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("shardedpool: watch topology: %w", err)
	}
	path := filepath.Clean(p.opt.TopologyFile)
	if err := w.Add(filepath.Dir(path)); err != nil {
		w.Close()
		return fmt.Errorf("shardedpool: watch topology: %w", err)
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer w.Close()
		var debounce <-chan time.Time
		for {
			select {
			case <-p.ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Clean(ev.Name) == path && ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Rename) != 0 {
					debounce = time.After(50 * time.Millisecond)
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				p.log.Error("shardedpool: topology watcher", "err", err)
			case <-debounce:
				debounce = nil
				p.reloadTopology()
			}
		}
	}()
	return nil
}

// reloadTopology applies an edited topology file: only address changes
// are accepted; anything that would move keys is rejected.
func (p *Pool) reloadTopology() {
	shards, err := readTopology(p.opt.TopologyFile, p.opt.MasterNames)
	if err == nil && !slices.EqualFunc(shards, p.shards, func(a StaticShard, b *shard) bool { return a.Name == b.name }) {
		err = fmt.Errorf("shardedpool: topology file %s changes the shard list; only addresses may change", p.opt.TopologyFile)
	}
	if err != nil {
		p.log.Error("shardedpool: topology edit rejected, keeping the old topology", "err", err)
		return
	}
	for i, st := range shards {
		s := p.shards[i]
		if s.conn().addr != st.Addr {
			p.switchTo(s, p.newShardClient(st.Addr), st.Addr, -1, "topology file edit")
		}
	}
}

func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0 && n < 65536
}
