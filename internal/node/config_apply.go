package node

import (
	"strings"

	"github.com/shardis/shardis/internal/node/config"
)

// Config is the node's configuration (internal/node/config): the server
// and its callers name it node.Config.
type Config = config.Config

// NewConfig returns a configuration with Redis's defaults.
func NewConfig() *Config { return config.New() }

// configHook is what CONFIG SET does to a running server when it changes
// a directive (config.Applier): apply after the values are stored,
// applyErr for a step that can fail, after which CONFIG SET restores every
// value of the call and replies the error.
type configHook struct {
	apply    func(s *Server, v string)
	applyErr func(s *Server, v string) error
}

// configHooks are the server's hooks by directive, registered by init
// functions (onConfigSet, this file's init) before any server runs.
var configHooks = map[config.Directive]*configHook{}

// hook returns d's entry of configHooks, added if there is none.
func hook(d config.Directive) *configHook {
	h := configHooks[d]
	if h == nil {
		h = &configHook{}
		configHooks[d] = h
	}
	return h
}

// onConfigSet adds f to what CONFIG SET runs when it sets d, after the
// hooks registered before it.
func onConfigSet(d config.Directive, f func(s *Server, v string)) {
	h := hook(d)
	if prev := h.apply; prev != nil {
		h.apply = func(s *Server, v string) { prev(s, v); f(s, v) }
	} else {
		h.apply = f
	}
}

func init() {
	hook(config.DirPort).applyErr = applyPort // config_port.go
	onConfigSet(config.DirRequirepass, applyRequirepass)
	onConfigSet(config.DirAclPubsubDefault, applyACLPubsubDefault)
	for _, d := range config.ClusterDirectives() {
		onConfigSet(d, applyClusterConfig) // clustermode.go
	}
}

// configApplier is the server as CONFIG SET applies changes to it.
type configApplier struct{ s *Server }

var _ config.Applier = configApplier{}

func (a configApplier) ApplyErr(d config.Directive, v string) error {
	if h := configHooks[d]; h != nil && h.applyErr != nil {
		return h.applyErr(a.s, v)
	}
	return nil
}

func (a configApplier) Apply(d config.Directive, v string) {
	if h := configHooks[d]; h != nil && h.apply != nil {
		h.apply(a.s, v)
	}
}

// applyRequirepass makes requirepass the default user's only password,
// as Redis's ACLUpdateDefaultUserPassword ("" makes it nopass).
func applyRequirepass(s *Server, v string) {
	s.acl.Mu.Lock()
	s.acl.Reg.SetDefaultPassword(v)
	s.aclChanged()
	s.acl.Mu.Unlock()
}

// applyACLPubsubDefault changes what new users and selectors start with
// (existing users keep their channels).
func applyACLPubsubDefault(s *Server, v string) {
	s.acl.Mu.Lock()
	s.acl.Reg.PubsubDefaultAll = strings.EqualFold(v, "allchannels")
	s.acl.Mu.Unlock()
}
