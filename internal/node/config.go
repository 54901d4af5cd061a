package node

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/shardis/shardis/internal/resp"
)

// Config holds every directive a node understands, keyed by its redis.conf
// name. Values are kept as Redis prints them in CONFIG GET; typed accessors
// parse them. Unknown directives are refused by Set, as Redis refuses them.
type Config struct {
	mu     sync.RWMutex
	values map[string]string
	// File is the path of the config file, for CONFIG REWRITE ("" if none).
	// Set it before serving, or through SetPath (commands read it with
	// Path).
	File string
	// snap is the lock-free copy readers use (see configSnapshot).
	snap atomic.Pointer[configSnapshot]
	// order lists directives as the file gave them, for CONFIG REWRITE.
	order []string
	// users are the "user" directives, each the words after "user"
	// (config_acl.go); userLines renders the current users for CONFIG
	// REWRITE (nil: user lines are kept as they are).
	users     [][]string
	userLines func() []string
}

//go:generate go run ../../scripts/gen-directives

// Directive names one row of the directive table below. Its constants
// (DirPort, DirProtoMaxBulkLen ...) are generated from the table into
// directives_gen.go, so a misspelt directive does not compile; names from
// the wire and from config files are resolved through the table.
type Directive uint16

// String returns the directive's redis.conf name.
func (d Directive) String() string {
	if d >= numDirectives {
		return ""
	}
	return directiveNames[d]
}

// directiveByName maps a canonical name to its Directive.
var directiveByName = func() map[string]Directive {
	m := make(map[string]Directive, numDirectives)
	for d, n := range directiveNames {
		m[n] = Directive(d)
	}
	return m
}()

// configDef describes one directive.
type configDef struct {
	id    Directive
	def   string
	check func(v string) (string, error) // normalises or rejects a value
	// immutable directives cannot be changed by CONFIG SET.
	immutable bool
	// apply is run after CONFIG SET changes the value on a running server.
	apply func(s *Server, v string)
	// applyErr is an apply step that can fail (CONFIG SET port): CONFIG
	// SET then restores every value it changed and replies the error.
	applyErr func(s *Server, v string) error
	alias    string
	// protected directives are Redis's PROTECTED_CONFIG: CONFIG SET
	// changes them only where enable-protected-configs allows the client
	// (security.go).
	protected bool
	// hidden directives are left out of CONFIG GET patterns (an exact
	// name still finds them), as Redis's HIDDEN_CONFIG.
	hidden bool
}

var configDefs = map[string]*configDef{}

func defConfig(name, def string, check func(string) (string, error), immutable bool) *configDef {
	id, ok := directiveByName[name]
	if !ok {
		panic("node: directive " + name + " is not in directives_gen.go: run go generate ./internal/node")
	}
	d := &configDef{id: id, def: def, check: check, immutable: immutable}
	configDefs[name] = d
	return d
}

func init() {
	defConfig("port", "6379", checkIntRange(0, 65535), false).applyErr = applyPort
	defConfig("bind", "* -::*", nil, false)
	defConfig("requirepass", "", nil, false).apply = applyRequirepass
	defConfig("masterauth", "", nil, false)
	defConfig("masteruser", "", nil, false)
	defConfig("dir", ".", nil, false).protected = true
	defConfig("dbfilename", "dump.rdb", nil, false).protected = true
	defConfig("databases", "16", checkIntRange(1, 1<<20), true)
	defConfig("maxclients", "10000", checkIntRange(1, 1<<30), false)
	defConfig("timeout", "0", checkIntRange(0, 1<<31-1), false)
	defConfig("tcp-keepalive", "300", checkIntRange(0, 1<<31-1), false)
	defConfig("protected-mode", "yes", checkBool, false)
	defConfig("loglevel", "notice", checkEnum("debug", "verbose", "notice", "warning", "nothing"), false)
	defConfig("logfile", "", nil, true)
	defConfig("maxmemory", "0", checkMemory, false)
	defConfig("maxmemory-clients", "0", checkMemoryOrPercent, false)
	defConfig("maxmemory-policy", "noeviction", checkEnum("volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"), false)
	defConfig("maxmemory-samples", "5", checkIntRange(1, 1<<31-1), false)
	defConfig("maxmemory-eviction-tenacity", "10", checkIntRange(0, 100), false)
	defConfig("lfu-log-factor", "10", checkIntRange(0, 1<<31-1), false)
	defConfig("lfu-decay-time", "1", checkIntRange(0, 1<<31-1), false)
	defConfig("proto-max-bulk-len", "536870912", checkMemoryMin(1024*1024), false)
	defConfig("client-query-buffer-limit", "1073741824", checkMemoryMin(1024*1024), false)
	defConfig("client-output-buffer-limit", "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", checkOutputBufferLimit, false)
	defConfig("hz", "10", checkIntRange(1, 500), false)
	defConfig("dynamic-hz", "yes", checkBool, false)
	defConfig("active-expire-effort", "1", checkIntRange(1, 10), false)
	defConfig("notify-keyspace-events", "", checkNotifyFlags, false)
	defConfig("slowlog-log-slower-than", "10000", checkIntRange(-1, 1<<62), false)
	defConfig("slowlog-max-len", "128", checkIntRange(0, 1<<31-1), false)
	defConfig("latency-monitor-threshold", "0", checkIntRange(0, 1<<62), false)
	defConfig("latency-tracking", "yes", checkBool, false)
	defConfig("lazyfree-lazy-eviction", "no", checkBool, false)
	defConfig("lazyfree-lazy-expire", "no", checkBool, false)
	defConfig("lazyfree-lazy-server-del", "no", checkBool, false)
	defConfig("lazyfree-lazy-user-del", "no", checkBool, false)
	defConfig("lazyfree-lazy-user-flush", "no", checkBool, false)
	defConfig("daemonize", "no", checkBool, true)
	defConfig("pidfile", "", nil, true)
	defConfig("unixsocket", "", nil, true)
	defConfig("tcp-backlog", "511", checkIntRange(0, 1<<31-1), true)
	defConfig("save", "3600 1 300 100 60 10000", checkSave, false)
	defConfig("appendonly", "no", checkBool, false)
	defConfig("appendfilename", "appendonly.aof", nil, true)
	defConfig("appenddirname", "appendonlydir", nil, true)
	defConfig("appendfsync", "everysec", checkEnum("always", "everysec", "no"), false)
	defConfig("auto-aof-rewrite-percentage", "100", checkIntRange(0, 1<<31-1), false)
	defConfig("auto-aof-rewrite-min-size", "67108864", checkMemory, false)
	defConfig("aof-load-truncated", "yes", checkBool, false)
	defConfig("aof-use-rdb-preamble", "yes", checkBool, false)
	defConfig("rdb-save-incremental-fsync", "yes", checkBool, false)
	defConfig("aof-rewrite-incremental-fsync", "yes", checkBool, false)
	defConfig("aof-timestamp-enabled", "no", checkBool, false)
	defConfig("rdbcompression", "yes", checkBool, false)
	defConfig("rdbchecksum", "yes", checkBool, false)
	defConfig("stop-writes-on-bgsave-error", "yes", checkBool, false)
	defConfig("replicaof", "", nil, false).alias = "slaveof"
	defConfig("replica-read-only", "yes", checkBool, false).alias = "slave-read-only"
	defConfig("replica-serve-stale-data", "yes", checkBool, false).alias = "slave-serve-stale-data"
	defConfig("replica-priority", "100", checkIntRange(0, 1<<31-1), false).alias = "slave-priority"
	defConfig("replica-announced", "yes", checkBool, false)
	defConfig("replica-announce-ip", "", nil, false).alias = "slave-announce-ip"
	defConfig("replica-announce-port", "0", checkIntRange(0, 65535), false).alias = "slave-announce-port"
	defConfig("replica-lazy-flush", "no", checkBool, false)
	defConfig("repl-diskless-sync", "yes", checkBool, false)
	defConfig("repl-diskless-sync-delay", "5", checkIntRange(0, 1<<31-1), false)
	defConfig("repl-diskless-sync-max-replicas", "0", checkIntRange(0, 1<<31-1), false)
	defConfig("repl-diskless-load", "disabled", checkEnum("disabled", "on-empty-db", "swapdb"), false)
	defConfig("repl-backlog-size", "1048576", checkMemoryMin(1), false)
	defConfig("repl-backlog-ttl", "3600", checkIntRange(0, 1<<31-1), false)
	defConfig("repl-timeout", "60", checkIntRange(1, 1<<31-1), false)
	defConfig("repl-ping-replica-period", "10", checkIntRange(1, 1<<31-1), false).alias = "repl-ping-slave-period"
	defConfig("repl-disable-tcp-nodelay", "no", checkBool, false)
	defConfig("min-replicas-to-write", "0", checkIntRange(0, 1<<31-1), false).alias = "min-slaves-to-write"
	defConfig("min-replicas-max-lag", "10", checkIntRange(0, 1<<31-1), false).alias = "min-slaves-max-lag"
	defConfig("min-replicas-ack", "0", checkIntRange(0, 1<<31-1), false)            // replication_ack.go
	defConfig("min-replicas-ack-timeout", "1000", checkIntRange(1, 1<<31-1), false) // ms
	defConfig("hash-max-listpack-entries", "128", checkIntRange(0, 1<<31-1), false).alias = "hash-max-ziplist-entries"
	defConfig("hash-max-listpack-value", "64", checkIntRange(0, 1<<31-1), false).alias = "hash-max-ziplist-value"
	defConfig("list-max-listpack-size", "-2", checkIntRange(-5, 1<<31-1), false).alias = "list-max-ziplist-size"
	defConfig("list-compress-depth", "0", checkIntRange(0, 1<<31-1), false)
	defConfig("set-max-intset-entries", "512", checkIntRange(0, 1<<31-1), false)
	defConfig("zset-max-listpack-entries", "128", checkIntRange(0, 1<<31-1), false).alias = "zset-max-ziplist-entries"
	defConfig("zset-max-listpack-value", "64", checkIntRange(0, 1<<31-1), false).alias = "zset-max-ziplist-value"
	defConfig("hll-sparse-max-bytes", "3000", checkMemory, false)
	defConfig("stream-node-max-bytes", "4096", checkMemory, false)
	defConfig("stream-node-max-entries", "100", checkIntRange(0, 1<<31-1), false)
	defConfig("activerehashing", "yes", checkBool, false)
	defConfig("lua-time-limit", "5000", checkIntRange(0, 1<<62), false).alias = "busy-reply-threshold"
	defConfig("cluster-enabled", "no", checkBool, true)
	defConfig("cluster-config-file", "nodes.conf", nil, true)
	defConfig("cluster-node-timeout", "15000", checkIntRange(0, 1<<62), false)
	defConfig("enable-debug-command", "no", checkEnum("yes", "no", "local"), true)
	defConfig("enable-protected-configs", "no", checkEnum("yes", "no", "local"), true)
	// io-threads is the number of threads running clients' commands
	// (GOMAXPROCS, set by cmd/shardnode at start). Redis's default is 1
	// (one thread runs every command); shardnode's is one per CPU but one,
	// as its keyspace is sharded (docs/ARCHITECTURE.md "Threads").
	defConfig("io-threads", strconv.Itoa(defaultIOThreads(runtime.GOMAXPROCS(0))), checkIntRange(1, 128), true)
	defConfig("supervised", "no", nil, true)
	defConfig("always-show-logo", "no", checkBool, true)
	defConfig("set-proc-title", "yes", checkBool, true)
	defConfig("crash-log-enabled", "yes", checkBool, false)
	defConfig("jemalloc-bg-thread", "yes", checkBool, false)
	defConfig("activedefrag", "no", checkBool, false)
	defConfig("close-on-replica-write", "yes", checkBool, false)
	defConfig("metrics-addr", "", nil, true).hidden = true
	defConfig("gc-percent", "50", checkIntRange(-1, 1000), false)
	defConfig("gc-min-headroom", "16777216", checkMemory, false) // gc.go
	// Accepted for redis.conf compatibility (Redis's test suite sets them);
	// they have no effect here.
	defConfig("no-appendfsync-on-rewrite", "no", checkBool, false)
	defConfig("enable-module-command", "no", checkEnum("yes", "no", "local"), true)
	defConfig("propagation-error-behavior", "ignore", checkEnum("ignore", "panic", "panic-on-replicas"), false)
	defConfig("shutdown-timeout", "10", checkIntRange(0, 1<<31-1), false)
	defConfig("loading-process-events-interval-bytes", "2097152", checkIntRange(1024, 1<<31-1), false).hidden = true
	defConfig("key-load-delay", "0", checkIntRange(-1<<31, 1<<31-1), false).hidden = true
	defConfig("rdb-key-save-delay", "0", checkIntRange(-1<<31, 1<<31-1), false).hidden = true
	defConfig("watchdog-period", "0", checkIntRange(0, 1<<31-1), false).hidden = true
}

// NewConfig returns a configuration with Redis's defaults.
func NewConfig() *Config {
	c := &Config{values: make(map[string]string, len(configDefs))}
	for name, d := range configDefs {
		c.values[name] = d.def
	}
	c.publishLocked()
	return c
}

func canonicalName(name string) (string, *configDef) {
	name = strings.ToLower(name)
	if d, ok := configDefs[name]; ok {
		return name, d
	}
	for n, d := range configDefs {
		if d.alias == name {
			return n, d
		}
	}
	return name, nil
}

// Set validates and stores a directive. It returns Redis's error text on
// failure.
func (c *Config) Set(name, value string) error {
	canon, d := canonicalName(name)
	if d == nil {
		return fmt.Errorf("unknown option or number of arguments for CONFIG SET - '%s'", name)
	}
	if d.check != nil {
		v, err := d.check(value)
		if err != nil {
			return fmt.Errorf("argument(s) must be one of the following: %w", err)
		}
		value = v
	}
	c.mu.Lock()
	c.values[canon] = value
	c.publishLocked()
	c.mu.Unlock()
	return nil
}

// configSnapshot is an immutable copy of the values, with numbers parsed,
// that readers use without locking: commands read settings on every call,
// so reads must not contend on a shared lock.
type configSnapshot struct {
	values [numDirectives]string
	ints   [numDirectives]int64 // 0 where the value is not an integer
}

// publishLocked installs a new snapshot after a change. c.mu is held.
func (c *Config) publishLocked() {
	sn := &configSnapshot{}
	for k, v := range c.values {
		d, ok := directiveByName[k]
		if !ok {
			continue
		}
		sn.values[d] = v
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			sn.ints[d] = n
		}
	}
	c.snap.Store(sn)
}

// Get returns a directive's value.
func (c *Config) Get(d Directive) string {
	if d >= numDirectives {
		return ""
	}
	if sn := c.snap.Load(); sn != nil {
		return sn.values[d]
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.values[directiveNames[d]]
}

// Int returns a numeric directive (0 if its value is not an integer).
func (c *Config) Int(d Directive) int64 {
	if d >= numDirectives {
		return 0
	}
	if sn := c.snap.Load(); sn != nil {
		return sn.ints[d]
	}
	n, _ := strconv.ParseInt(c.Get(d), 10, 64)
	return n
}

// Bool returns a yes/no directive.
func (c *Config) Bool(d Directive) bool { return c.Get(d) == "yes" }

// byName returns the value of the directive with the canonical name
// ("" if there is none): for names from the wire and files, resolved
// through canonicalName first.
func (c *Config) byName(name string) string {
	d, ok := directiveByName[name]
	if !ok {
		return ""
	}
	return c.Get(d)
}

// Names returns every directive name, sorted.
func (c *Config) Names() []string {
	names := make([]string, 0, len(configDefs))
	for n := range configDefs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Path returns the config file's path ("" if none).
func (c *Config) Path() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.File
}

// SetPath changes the config file's path on a running server.
func (c *Config) SetPath(path string) {
	c.mu.Lock()
	c.File = path
	c.mu.Unlock()
}

// ParseFile reads a redis.conf-style file.
func (c *Config) ParseFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("node: config: %w", err)
	}
	defer f.Close()
	c.File = path
	return c.Parse(f, path)
}

// Parse reads redis.conf syntax: one directive per line, arguments split as
// Redis splits them (quotes allowed), '#' comments. Repeated "save" lines
// accumulate as Redis does.
func (c *Config) Parse(r io.Reader, source string) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	saves := []string{}
	sawSave := false
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		parts, ok := resp.SplitArgs([]byte(text))
		if !ok || len(parts) == 0 {
			return fmt.Errorf("node: config %s:%d: unbalanced quotes", source, line)
		}
		name := strings.ToLower(string(parts[0]))
		args := make([]string, len(parts)-1)
		for i, p := range parts[1:] {
			args[i] = string(p)
		}
		if name == "user" {
			c.addUser(args)
			continue
		}
		if name == "include" || name == "rename-command" || name == "loadmodule" {
			continue
		}
		if name == "save" {
			sawSave = true
			v := strings.Join(args, " ")
			if v != "" {
				saves = append(saves, v)
			}
			continue
		}
		if err := c.SetArgs(name, args); err != nil {
			return fmt.Errorf("node: config %s:%d: %w", source, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("node: config %s: %w", source, err)
	}
	if sawSave {
		if err := c.Set("save", strings.Join(saves, " ")); err != nil {
			return fmt.Errorf("node: config %s: %w", source, err)
		}
	}
	return nil
}

// SetArgs sets a directive given as separate words (from a file line or
// command-line flags).
func (c *Config) SetArgs(name string, args []string) error {
	if strings.EqualFold(name, "user") {
		c.addUser(args)
		return nil
	}
	canon, d := canonicalName(name)
	if d == nil {
		return fmt.Errorf("bad directive or wrong number of arguments: %q", name)
	}
	c.order = append(c.order, canon)
	return c.Set(canon, strings.Join(args, " "))
}

// Validate checks cross-directive constraints.
func (c *Config) Validate() error {
	if c.Int(DirDatabases) < 1 {
		return errors.New("node: config: databases must be at least 1")
	}
	return nil
}

func checkIntRange(lo, hi int64) func(string) (string, error) {
	return func(v string) (string, error) {
		n, err := parseMemory(v)
		if err != nil {
			return "", errors.New("argument couldn't be parsed into an integer")
		}
		if n < lo || n > hi {
			return "", fmt.Errorf("argument must be between %d and %d inclusive", lo, hi)
		}
		return strconv.FormatInt(n, 10), nil
	}
}

func checkBool(v string) (string, error) {
	switch strings.ToLower(v) {
	case "yes", "1", "true":
		return "yes", nil
	case "no", "0", "false":
		return "no", nil
	}
	return "", errors.New("argument must be 'yes' or 'no'")
}

func checkEnum(values ...string) func(string) (string, error) {
	return func(v string) (string, error) {
		lv := strings.ToLower(v)
		for _, ok := range values {
			if lv == ok {
				return ok, nil
			}
		}
		return "", errors.New("argument(s) must be one of the following: " + strings.Join(values, ", "))
	}
}

func checkMemory(v string) (string, error) {
	n, err := parseMemory(v)
	if err != nil || n < 0 {
		return "", errors.New("argument must be a memory value")
	}
	return strconv.FormatInt(n, 10), nil
}

// checkMemoryOrPercent accepts a memory value or a percentage of
// maxmemory ("10%"), as Redis's PERCENT_CONFIG directives do.
func checkMemoryOrPercent(v string) (string, error) {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n < 0 {
			return "", errors.New("argument must be a memory or percent value")
		}
		if n > 100 {
			return "", errors.New("percentage argument must be less or equal to 100")
		}
		return strconv.FormatInt(n, 10) + "%", nil
	}
	return checkMemory(v)
}

func checkMemoryMin(min int64) func(string) (string, error) {
	return func(v string) (string, error) {
		n, err := parseMemory(v)
		if err != nil || n < min {
			return "", errors.New("argument must be a memory value")
		}
		return strconv.FormatInt(n, 10), nil
	}
}

// parseMemory parses "100", "1kb", "2mb", "1gb", "1k" ... as Redis's
// memtoull does.
func parseMemory(v string) (int64, error) {
	lv := strings.ToLower(strings.TrimSpace(v))
	mul := int64(1)
	for _, u := range []struct {
		s string
		m int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1000 * 1000 * 1000}, {"m", 1000 * 1000}, {"k", 1000}, {"b", 1}} {
		if strings.HasSuffix(lv, u.s) {
			lv = strings.TrimSuffix(lv, u.s)
			mul = u.m
			break
		}
	}
	n, err := strconv.ParseInt(lv, 10, 64)
	if err != nil {
		return 0, err
	}
	return n * mul, nil
}

func checkSave(v string) (string, error) {
	f := strings.Fields(v)
	if len(f)%2 != 0 {
		return "", errors.New("Invalid save parameters")
	}
	for _, x := range f {
		if _, err := strconv.ParseInt(x, 10, 64); err != nil {
			return "", errors.New("Invalid save parameters")
		}
	}
	return strings.Join(f, " "), nil
}

func checkOutputBufferLimit(v string) (string, error) {
	f := strings.Fields(v)
	if len(f)%4 != 0 {
		return "", errors.New("Wrong number of arguments in buffer limit configuration.")
	}
	cur := map[string][3]string{}
	for i := 0; i < len(f); i += 4 {
		class := strings.ToLower(f[i])
		if class == "replica" {
			class = "slave"
		}
		if class != "normal" && class != "slave" && class != "pubsub" {
			return "", errors.New("Invalid client class specified in buffer limit configuration.")
		}
		var vals [3]string
		for j := 0; j < 3; j++ {
			n, err := parseMemory(f[i+1+j])
			if err != nil || n < 0 {
				return "", errors.New("Error in hard, soft or soft-seconds setting in buffer limit configuration.")
			}
			vals[j] = strconv.FormatInt(n, 10)
		}
		cur[class] = vals
	}
	// Always print all three classes, as CONFIG GET does.
	def := map[string][3]string{"normal": {"0", "0", "0"}, "slave": {"268435456", "67108864", "60"}, "pubsub": {"33554432", "8388608", "60"}}
	var out []string
	for _, class := range []string{"normal", "slave", "pubsub"} {
		vals, ok := cur[class]
		if !ok {
			vals = def[class]
		}
		out = append(out, class, vals[0], vals[1], vals[2])
	}
	return strings.Join(out, " "), nil
}

func checkNotifyFlags(v string) (string, error) {
	f, ok := parseNotifyFlags(v)
	if !ok {
		return "", errors.New("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
	}
	return notifyFlagsString(f), nil
}

// notifyFlagsString renders notify-keyspace-events as CONFIG GET shows it
// (Redis's keyspaceEventsFlagsToString).
func notifyFlagsString(f int) string {
	var b strings.Builder
	if f&notifyAll == notifyAll {
		b.WriteByte('A')
	} else {
		for _, x := range []struct {
			f  int
			ch byte
		}{{notifyGeneric, 'g'}, {notifyString, '$'}, {notifyList, 'l'}, {notifySet, 's'}, {notifyHash, 'h'}, {notifyZSet, 'z'}, {notifyExpired, 'x'}, {notifyEvicted, 'e'}, {notifyStream, 't'}, {notifyModule, 'd'}, {notifyNew, 'n'}} {
			if f&x.f != 0 {
				b.WriteByte(x.ch)
			}
		}
	}
	if f&notifyKeyspace != 0 {
		b.WriteByte('K')
	}
	if f&notifyKeyevent != 0 {
		b.WriteByte('E')
	}
	if f&notifyKeyMiss != 0 {
		b.WriteByte('m')
	}
	return b.String()
}

// multiLineDirectives are written one line per group of words by CONFIG
// REWRITE, as Redis writes them.
var multiLineDirectives = map[string]int{"save": 2, "client-output-buffer-limit": 4}

// rawDirectives are written with their words unquoted.
var rawDirectives = map[string]bool{"bind": true, "replicaof": true}

// rewriteLines renders a directive's current value as config file lines.
func (c *Config) rewriteLines(name string) []string {
	v := c.byName(name)
	if n, ok := multiLineDirectives[name]; ok {
		f := strings.Fields(v)
		if len(f) == 0 {
			return []string{name + ` ""`}
		}
		var out []string
		for i := 0; i+n <= len(f); i += n {
			out = append(out, name+" "+strings.Join(f[i:i+n], " "))
		}
		return out
	}
	if rawDirectives[name] && v != "" {
		return []string{name + " " + v}
	}
	return []string{name + " " + quoteConfigValue(v)}
}

// quoteConfigValue quotes a value when it is empty or holds characters
// the config parser would split or unescape.
func quoteConfigValue(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\r\n\"'\\") {
		allPrint := true
		for i := 0; i < len(v); i++ {
			if v[i] < 32 || v[i] > 126 {
				allPrint = false
			}
		}
		if allPrint {
			return v
		}
	}
	return reprString([]byte(v))
}

// Rewrite rewrites the config file in place as CONFIG REWRITE does: lines
// of directives keep their position with the current value, repeated
// directives collapse into the first, comments and unknown lines stay, and
// directives that differ from their default and were not in the file are
// appended after a "# Generated by CONFIG REWRITE" line.
func (c *Config) Rewrite() error {
	path := c.Path()
	if path == "" {
		return errors.New("node: config: no config file")
	}
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	const marker = "# Generated by CONFIG REWRITE"
	var out []string
	written := map[string]bool{}
	lines := strings.Split(strings.TrimRight(string(old), "\n"), "\n")
	if len(old) == 0 {
		lines = nil
	}
	for _, line := range lines {
		text := strings.TrimSpace(line)
		if text == marker {
			continue
		}
		if text == "" || text[0] == '#' {
			out = append(out, line)
			continue
		}
		parts, ok := resp.SplitArgs([]byte(text))
		if !ok || len(parts) == 0 {
			out = append(out, line)
			continue
		}
		if c.userLines != nil && strings.EqualFold(string(parts[0]), "user") {
			if !written["user"] {
				written["user"] = true
				out = append(out, c.userLines()...)
			}
			continue
		}
		canon, d := canonicalName(string(parts[0]))
		if d == nil {
			out = append(out, line)
			continue
		}
		if written[canon] {
			continue
		}
		written[canon] = true
		out = append(out, c.rewriteLines(canon)...)
	}
	var extra []string
	for _, name := range c.Names() {
		if written[name] || c.byName(name) == configDefs[name].def {
			continue
		}
		extra = append(extra, c.rewriteLines(name)...)
	}
	if c.userLines != nil && !written["user"] {
		extra = append(extra, c.userLines()...)
	}
	if len(extra) > 0 {
		// Drop trailing blank lines before the generated block.
		for len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
			out = out[:len(out)-1]
		}
		out = append(out, marker)
		out = append(out, extra...)
	}
	data := strings.Join(out, "\n") + "\n"
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("node: config rewrite: %w", err)
	}
	if _, err := f.WriteAt([]byte(data), 0); err != nil {
		f.Close()
		return fmt.Errorf("node: config rewrite: %w", err)
	}
	if err := f.Truncate(int64(len(data))); err != nil {
		f.Close()
		return fmt.Errorf("node: config rewrite: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("node: config rewrite: %w", err)
	}
	return f.Close()
}

// defaultIOThreads is io-threads' default on a machine with cpus usable
// CPUs: every CPU but one, at least 1 and at most 128. The core left over
// runs the kernel's network stack and the clients that share the machine;
// on 2 cores, where redis-benchmark shares the machine, one thread serves
// pipelined SET and GET better than two (docs/BENCHMARKS.md).
func defaultIOThreads(cpus int) int {
	return max(1, min(cpus-1, 128))
}
