// Package migrate moves one shard of a pre-sharded deployment to a new
// node without losing acknowledged writes: the new node replicates from
// the old master, catches up, and the two swap roles with FAILOVER (writes
// paused on the old master until the new one has every write), after which
// clients are repointed (a topology file is rewritten atomically) and the
// old node is optionally retired.
package migrate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of Options.
const (
	DefaultSyncTimeout   = 10 * time.Minute
	DefaultSwitchTimeout = 5 * time.Second
)

// Options configures a shard migration.
type Options struct {
	// From is the current master's address (host:port). Required.
	From string
	// To is the new node's address (host:port). It must be a master with
	// an empty dataset unless Force is set. Required.
	To string
	// Password (and Username) authenticate to both nodes; the new node
	// also uses them as masterauth/masteruser.
	Username, Password string
	// SyncTimeout bounds the initial synchronisation (default 10 minutes).
	SyncTimeout time.Duration
	// SwitchTimeout bounds how long writes may stay paused during the
	// switch (default 5 s). The switch is aborted, and the old master
	// keeps serving, if the new node cannot catch up in that time.
	SwitchTimeout time.Duration
	// TopologyFile and Shard, when set, repoint the shard in a
	// shardedpool topology file ("<name> <host:port>" lines) atomically.
	TopologyFile, Shard string
	// Retire shuts the old node down after the switch (SHUTDOWN NOSAVE).
	Retire bool
	// Force allows a target that already holds data.
	Force bool
	// Progress receives human-readable progress lines (nil: discarded).
	Progress io.Writer
}

// Run performs the migration. It returns after the switch (and the
// topology rewrite) or with the first error; on error before the switch
// the old master still serves and the new node is left replicating.
func Run(ctx context.Context, opt Options) error {
	if opt.From == "" || opt.To == "" {
		return errors.New("migrate: --from and --to are required")
	}
	if opt.SyncTimeout <= 0 {
		opt.SyncTimeout = DefaultSyncTimeout
	}
	if opt.SwitchTimeout <= 0 {
		opt.SwitchTimeout = DefaultSwitchTimeout
	}
	out := opt.Progress
	if out == nil {
		out = io.Discard
	}
	say := func(format string, args ...any) {
		fmt.Fprintf(out, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	}
	client := func(addr string) *redis.Client {
		return redis.NewClient(&redis.Options{Addr: addr, Username: opt.Username, Password: opt.Password,
			DisableIdentity: true, MaxRetries: -1, DialTimeout: 2 * time.Second, ReadTimeout: 10 * time.Second})
	}
	from, to := client(opt.From), client(opt.To)
	defer from.Close()
	defer to.Close()

	role, err := roleOf(ctx, from)
	if err != nil {
		return fmt.Errorf("migrate: old master %s: %w", opt.From, err)
	}
	if role != "master" {
		return fmt.Errorf("migrate: %s is a %s, not a master", opt.From, role)
	}
	if !opt.Force {
		keys, err := totalKeys(ctx, to)
		if err != nil {
			return fmt.Errorf("migrate: new node %s: %w", opt.To, err)
		}
		if keys > 0 {
			return fmt.Errorf("migrate: new node %s holds %d keys (use Force to overwrite them)", opt.To, keys)
		}
	}
	fh, fp, err := net.SplitHostPort(opt.From)
	if err != nil {
		return fmt.Errorf("migrate: --from: %w", err)
	}
	th, tp, err := net.SplitHostPort(opt.To)
	if err != nil {
		return fmt.Errorf("migrate: --to: %w", err)
	}
	if opt.Password != "" {
		if err := to.ConfigSet(ctx, "masterauth", opt.Password).Err(); err != nil {
			return fmt.Errorf("migrate: set masterauth: %w", err)
		}
		if opt.Username != "" {
			_ = to.ConfigSet(ctx, "masteruser", opt.Username).Err()
		}
	}
	say("step 1/4: %s REPLICAOF %s", opt.To, opt.From)
	if err := to.Do(ctx, "REPLICAOF", fh, fp).Err(); err != nil {
		return fmt.Errorf("migrate: REPLICAOF: %w", err)
	}

	say("step 2/4: initial synchronisation")
	deadline := time.Now().Add(opt.SyncTimeout)
	lastLine := ""
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("migrate: %s did not finish its sync in %v", opt.To, opt.SyncTimeout)
		}
		ti, err := info(ctx, to, "replication")
		if err == nil {
			line := ""
			if ti["master_sync_in_progress"] == "1" {
				line = fmt.Sprintf("  transferring snapshot: %s of %s bytes", ti["master_sync_read_bytes"], ti["master_sync_total_bytes"])
			} else if ti["master_link_status"] == "up" {
				fi, ferr := info(ctx, from, "replication")
				if ferr == nil {
					mo, _ := strconv.ParseInt(fi["master_repl_offset"], 10, 64)
					so, _ := strconv.ParseInt(ti["slave_repl_offset"], 10, 64)
					line = fmt.Sprintf("  link up, replica offset %d, master offset %d, lag %d bytes", so, mo, mo-so)
					if mo-so < 1024*1024 {
						say("%s", line)
						break
					}
				}
			} else {
				line = "  link " + ti["master_link_status"] + ", connecting"
			}
			if line != lastLine {
				say("%s", line)
				lastLine = line
			}
		}
		time.Sleep(100 * time.Millisecond)
	}

	say("step 3/4: switching roles (writes paused on %s for at most %v)", opt.From, opt.SwitchTimeout)
	err = from.Do(ctx, "FAILOVER", "TO", th, tp, "TIMEOUT", opt.SwitchTimeout.Milliseconds()).Err()
	if err != nil {
		return fmt.Errorf("migrate: FAILOVER on %s: %w", opt.From, err)
	}
	switchDeadline := time.Now().Add(opt.SwitchTimeout + 5*time.Second)
	for {
		if time.Now().After(switchDeadline) {
			return fmt.Errorf("migrate: the switch did not complete in time")
		}
		fi, err := info(ctx, from, "replication")
		if err == nil && fi["master_failover_state"] == "no-failover" {
			if fi["role"] == "slave" {
				break
			}
			return fmt.Errorf("migrate: FAILOVER aborted on %s (new node did not catch up); the old master keeps serving", opt.From)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r, err := roleOf(ctx, to); err != nil || r != "master" {
		return fmt.Errorf("migrate: new node role is %q after the switch: %v", r, err)
	}
	say("  %s is the master; %s replicates from it", opt.To, opt.From)

	say("step 4/4: repointing clients")
	if opt.TopologyFile != "" {
		if err := rewriteTopology(opt.TopologyFile, opt.Shard, opt.To); err != nil {
			return err
		}
		say("  %s: shard %s -> %s", opt.TopologyFile, opt.Shard, opt.To)
	} else {
		say("  point clients of this shard at %s (no topology file given)", opt.To)
	}
	if opt.Retire {
		// SHUTDOWN closes the connection without a reply.
		_ = from.Do(ctx, "SHUTDOWN", "NOSAVE").Err()
		say("  old node %s shut down", opt.From)
	}
	say("done")
	return nil
}

func roleOf(ctx context.Context, c *redis.Client) (string, error) {
	v, err := c.Do(ctx, "ROLE").Slice()
	if err != nil {
		return "", err
	}
	if len(v) == 0 {
		return "", errors.New("empty ROLE reply")
	}
	s, _ := v[0].(string)
	return s, nil
}

func info(ctx context.Context, c *redis.Client, section string) (map[string]string, error) {
	text, err := c.Info(ctx, section).Result()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m, nil
}

func totalKeys(ctx context.Context, c *redis.Client) (int64, error) {
	m, err := info(ctx, c, "keyspace")
	if err != nil {
		return 0, err
	}
	var n int64
	for k, v := range m {
		if !strings.HasPrefix(k, "db") {
			continue
		}
		for _, f := range strings.Split(v, ",") {
			if x, ok := strings.CutPrefix(f, "keys="); ok {
				k, _ := strconv.ParseInt(x, 10, 64)
				n += k
			}
		}
	}
	return n, nil
}

// rewriteTopology replaces shard's address in a topology file, writing a
// temporary file and renaming it so watchers never see a partial file.
func rewriteTopology(path, shard, addr string) error {
	if shard == "" {
		return errors.New("migrate: a topology file needs the shard name")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("migrate: topology: %w", err)
	}
	var b strings.Builder
	found := false
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == shard && !strings.HasPrefix(f[0], "#") {
			line = shard + " " + addr
			found = true
		}
		b.WriteString(line)
		b.WriteString("\n")
	}
	if !found {
		return fmt.Errorf("migrate: topology file %s has no shard %q", path, shard)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".topology-*")
	if err != nil {
		return fmt.Errorf("migrate: topology: %w", err)
	}
	if _, err := tmp.WriteString(b.String()); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("migrate: topology: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("migrate: topology: %w", err)
	}
	tmp.Close()
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("migrate: topology: %w", err)
	}
	return nil
}
