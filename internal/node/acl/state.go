package acl

import (
	"os"
	"sync"
	"sync/atomic"
)

// State is a server's side of ACLs: the registry of users, the ACL LOG,
// and the generation clients compare to notice that users changed.
//
// Users are immutable once published: a change installs a new *User and
// bumps Gen (Changed), and a client re-reads its user by name before its
// next check (User). So a check reads no lock, only Gen.
type State struct {
	Mu  sync.Mutex // guards Reg and Log
	Reg *Registry
	Log Log
	// Gen counts user changes.
	Gen atomic.Uint64
	// AuthRequired mirrors Reg.AuthRequired(): the default user has a
	// password or is off.
	AuthRequired atomic.Bool
}

// Changed publishes a change of the users: clients re-read theirs.
// Called with Mu held.
func (a *State) Changed() {
	a.AuthRequired.Store(a.Reg.AuthRequired())
	a.Gen.Add(1)
}

// User is the user named name now (nil: deleted) and the generation it
// belongs to.
func (a *State) User(name string) (*User, uint64) {
	a.Mu.Lock()
	defer a.Mu.Unlock()
	return a.Reg.User(name), a.Gen.Load()
}

// Authenticate is ACLAuthenticateUser's check: the user name with
// password pass (nil: refused), and the generation it belongs to.
func (a *State) Authenticate(name, pass string) (*User, uint64) {
	a.Mu.Lock()
	defer a.Mu.Unlock()
	return a.Reg.Authenticate(name, pass), a.Gen.Load()
}

// AddLog adds an entry to the ACL LOG, keeping at most maxLen.
func (a *State) AddLog(e LogEntry, now int64, maxLen int) {
	a.Mu.Lock()
	a.Log.Add(e, now, maxLen)
	a.Mu.Unlock()
}

// ConfigLines are every user's line as the aclfile and CONFIG REWRITE
// write them.
func (a *State) ConfigLines() []string {
	a.Mu.Lock()
	defer a.Mu.Unlock()
	return a.Reg.ConfigLines()
}

// LoadFile is ACL LOAD: the aclfile (file, relative to dir) replaces
// every user, or nothing changes. Called without Mu.
func (a *State) LoadFile(file, dir string) error {
	data, err := os.ReadFile(FilePath(file, dir))
	if err != nil {
		return OpenError(file, err)
	}
	a.Mu.Lock()
	defer a.Mu.Unlock()
	users, err := a.Reg.ParseLines(file, FileLines(data))
	if err != nil {
		return err
	}
	a.Reg.Replace(users)
	a.Changed()
	return nil
}

// SetUser is ACL SETUSER: the user name with rules applied (created if
// new), published; old is the user it replaced (nil: a new one).
func (a *State) SetUser(name string, rules []string) (nu, old *User, err error) {
	a.Mu.Lock()
	defer a.Mu.Unlock()
	nu, old, err = a.Reg.SetUser(name, rules)
	if err == nil {
		a.Changed()
	}
	return nu, old, err
}

// DelUsers is ACL DELUSER: the users of names are deleted; gone holds
// those that existed.
func (a *State) DelUsers(names [][]byte) (gone map[string]bool) {
	gone = map[string]bool{}
	a.Mu.Lock()
	defer a.Mu.Unlock()
	for _, n := range names {
		if a.Reg.DelUser(string(n)) != nil {
			gone[string(n)] = true
		}
	}
	if len(gone) > 0 {
		a.Changed()
	}
	return gone
}

// GetUser is ACL GETUSER's data: the user name (nil: none) and its
// selectors.
func (a *State) GetUser(name string) (*User, []SelectorInfo) {
	a.Mu.Lock()
	defer a.Mu.Unlock()
	u := a.Reg.User(name)
	if u == nil {
		return nil, nil
	}
	return u, a.Reg.Selectors(u)
}

// Names are the users' names, sorted.
func (a *State) Names() []string {
	a.Mu.Lock()
	defer a.Mu.Unlock()
	return a.Reg.Names()
}

// LogEntries is ACL LOG's: the latest count entries, or, with reset,
// none after emptying the log.
func (a *State) LogEntries(count int, reset bool) []LogEntry {
	a.Mu.Lock()
	defer a.Mu.Unlock()
	if reset {
		a.Log.Reset()
		return nil
	}
	return a.Log.Entries(count)
}
