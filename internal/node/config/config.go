// Package config is the node's configuration: the directive table (every
// redis.conf directive a node understands, with Redis's default, value
// check, alias and CONFIG SET mutability), the Config that holds the
// values, redis.conf parsing, CONFIG GET's pattern listing, CONFIG SET's
// all-or-nothing update, and CONFIG REWRITE.
//
// Directives are named by generated constants (DirPort ...), so a misspelt
// directive does not compile. Readers get values without locking from an
// immutable snapshot that every change republishes.
//
// The package knows nothing of a running server: what a change does to
// one (CONFIG SET port moving the listeners, requirepass changing the
// default user ...) is the server's, reached through the Applier that
// CONFIG SET is given.
package config

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
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
	// snap is the lock-free copy readers use (see Snapshot).
	snap atomic.Pointer[Snapshot]
	// order lists directives as the file gave them, for CONFIG REWRITE.
	order []string
	// users are the "user" directives, each the words after "user"
	// (acl.go); userLines renders the current users for CONFIG
	// REWRITE (nil: user lines are kept as they are).
	users     [][]string
	userLines func() []string
}

//go:generate go run ../../../scripts/gen-directives

// Directive names one row of the directive table (table.go, table_acl.go,
// table_cluster.go). Its constants (DirPort, DirProtoMaxBulkLen ...) are
// generated from the table into
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
	alias     string
	// protected directives are Redis's PROTECTED_CONFIG: CONFIG SET
	// changes them only where enable-protected-configs allows the client
	// (SetCommand's allowProtected).
	protected bool
	// hidden directives are left out of CONFIG GET patterns (an exact
	// name still finds them), as Redis's HIDDEN_CONFIG.
	hidden bool
}

var configDefs = map[string]*configDef{}

func defConfig(name, def string, check func(string) (string, error), immutable bool) *configDef {
	id, ok := directiveByName[name]
	if !ok {
		panic("config: directive " + name + " is not in directives_gen.go: run go generate ./internal/node/config")
	}
	d := &configDef{id: id, def: def, check: check, immutable: immutable}
	configDefs[name] = d
	return d
}

// New returns a configuration with Redis's defaults.
func New() *Config {
	c := &Config{values: make(map[string]string, len(configDefs))}
	for name, d := range configDefs {
		c.values[name] = d.def
	}
	c.publishLocked()
	return c
}

// Lookup resolves a directive's name or alias, in any case; ok is false
// when there is no such directive.
func Lookup(name string) (d Directive, ok bool) {
	_, def := canonicalName(name)
	if def == nil {
		return 0, false
	}
	return def.id, true
}

// Immutable reports whether CONFIG SET refuses to change d.
func (d Directive) Immutable() bool {
	if d >= numDirectives {
		return false
	}
	return configDefs[directiveNames[d]].immutable
}

// canonicalName resolves a name or alias, in any case, to the directive's
// canonical name and row (nil if there is none).
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

// Snapshot is an immutable copy of the values, with numbers parsed, that
// readers use without locking: commands read settings on every call, so
// reads must not contend on a shared lock. Every change publishes a new
// one, so a reader that caches values derived from the configuration
// rebuilds them when Config.Snapshot returns another pointer.
type Snapshot struct {
	values [numDirectives]string
	ints   [numDirectives]int64 // 0 where the value is not an integer
}

// publishLocked installs a new snapshot after a change. c.mu is held.
func (c *Config) publishLocked() {
	sn := &Snapshot{}
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

// Snapshot returns the current snapshot.
func (c *Config) Snapshot() *Snapshot { return c.snap.Load() }

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
