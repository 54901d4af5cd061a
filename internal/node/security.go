package node

import (
	"net"

	"github.com/shardis/shardis/internal/node/config"
)

// The security defaults of Redis 7.0: protected mode at accept time, and
// the yes/local/no switches enable-debug-command, enable-module-command
// and enable-protected-configs (docs/CONFIG.md).

// protectedModeError is the line Redis 7.0.15 writes to a client it refuses
// in protected mode (networking.c, clientAcceptHandler), word for word,
// including its "Setup a an".
const protectedModeError = "DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside."

// protectedCommandError is processCommand's refusal of a CMD_PROTECTED
// command (server.c): name is "DEBUG" or "MODULE", option the directive
// that allows it.
func protectedCommandError(name, option string) string {
	return "ERR " + name + " command not allowed. If the " + option + " option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."
}

// isLocalAddr reports whether a TCP peer address is local as Redis 7.0's
// islocalClient decides it: exactly 127.0.0.1 or ::1 (127.0.0.2 and the
// rest of 127/8 are not). A unix socket's address is local.
func isLocalAddr(a net.Addr) bool {
	switch ta := a.(type) {
	case *net.UnixAddr:
		return true
	case *net.TCPAddr:
		return ta.IP.Equal(net.IPv4(127, 0, 0, 1)) || ta.IP.Equal(net.IPv6loopback)
	}
	return false
}

// isLocalConn is islocalClient for a connection: a unix socket connection
// is local whatever its (often unnamed) peer address; a TCP connection by
// isLocalAddr.
func isLocalConn(nc net.Conn) bool {
	if _, ok := nc.(*net.UnixConn); ok {
		return true
	}
	return isLocalAddr(nc.RemoteAddr())
}

// isLocal reports whether the client is local (isLocalConn). A client
// without a connection runs commands the server issues itself (the AOF
// loader), which Redis never puts through these checks: it counts as
// local.
func (c *Client) isLocal() bool {
	if c.conn == nil {
		return true
	}
	return isLocalConn(c.conn)
}

// protectedAllowed is Redis's allowProtectedAction: setting is the value
// of a yes/local/no directive.
func (c *Client) protectedAllowed(setting string) bool {
	return setting == "yes" || (setting == "local" && c.isLocal())
}

// protectedRefusal returns the error that refuses a protected command
// (flagProtected) for this client, or "" if it may run.
func (c *Client) protectedRefusal(cmd *command) string {
	root := cmd
	if cmd.parent != nil {
		root = cmd.parent
	}
	name, option := "DEBUG", config.DirEnableDebugCommand
	if root.name == "module" {
		name, option = "MODULE", config.DirEnableModuleCommand
	}
	if c.protectedAllowed(c.srv.cfg.Get(option)) {
		return ""
	}
	return protectedCommandError(name, option.String())
}

// protectedModeRefuses reports whether protected mode refuses a connection
// nc, as Redis 7.0.15's clientAcceptHandler: protected-mode is on,
// the default user is nopass (no requirepass, no password given to it by
// ACL), and the peer is not local. The bind address plays no part.
func (s *Server) protectedModeRefuses(nc net.Conn) bool {
	if !s.cfg.Bool(config.DirProtectedMode) || isLocalConn(nc) {
		return false
	}
	s.acl.Mu.Lock()
	nopass := s.acl.Reg.Default().NoPass()
	s.acl.Mu.Unlock()
	return nopass
}
