package node

import (
	"math"
	"strconv"
	"strings"

	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/resp"
)

func registerConnectionCommands(t *commandTable) {
	t.add(&command{name: "ping", arity: -1, flags: flagFast | flagStale | flagLoading, fn: cmdPing, group: "connection", since: "1.0.0"})
	t.add(&command{name: "echo", arity: 2, flags: flagFast | flagStale | flagLoading, fn: cmdEcho, group: "connection", since: "1.0.0"})
	t.add(&command{name: "select", arity: 2, flags: flagFast | flagStale | flagLoading, fn: cmdSelect, group: "connection", since: "1.0.0"})
	t.add(&command{name: "quit", arity: -1, flags: flagNoScript | flagAllowBusy | flagFast | flagStale | flagLoading | flagNoAuth, fn: cmdQuit, group: "connection", since: "1.0.0"})
	t.add(&command{name: "reset", arity: 1, flags: flagNoScript | flagAllowBusy | flagFast | flagStale | flagLoading | flagNoAuth, fn: cmdReset, group: "connection", since: "6.2.0"})
	t.add(&command{name: "auth", arity: -2, flags: flagNoScript | flagAllowBusy | flagFast | flagStale | flagLoading | flagNoAuth | flagSkipMonitor | flagSkipSlowlog, fn: cmdAuth, group: "connection", since: "1.0.0"})
	t.add(&command{name: "hello", arity: -1, flags: flagNoScript | flagAllowBusy | flagFast | flagStale | flagLoading | flagNoAuth | flagSkipMonitor | flagSkipSlowlog, fn: cmdHello, group: "connection", since: "6.0.0"})
}

// PING [message]
func cmdPing(c *Client, args [][]byte) {
	if len(args) > 2 {
		c.addError(errWrongArgs("ping"))
		return
	}
	c.notePing()
	if c.hasFlag(clientPubSub) && c.proto < 3 {
		c.addArrayLen(2)
		c.addBulkString("pong")
		if len(args) == 2 {
			c.addBulk(args[1])
		} else {
			c.addBulkString("")
		}
		return
	}
	if len(args) == 2 {
		c.addBulk(args[1])
		return
	}
	c.addSimple("PONG")
}

// ECHO message
func cmdEcho(c *Client, args [][]byte) { c.addBulk(args[1]) }

// parseDBIndex parses a database number as SELECT, MOVE and COPY do
// (Redis's getIntFromObjectOrReply, then the configured databases),
// replying the error when it is not one.
func (c *Client) parseDBIndex(arg []byte) (int, bool) {
	n, ok := parseInt(arg)
	switch {
	case !ok:
		c.addError(errNotInt)
	case n < math.MinInt32 || n > math.MaxInt32:
		c.addError("ERR value is out of range, value must between -2147483648 and 2147483647")
	case n < 0 || n >= int64(len(c.srv.dbs)):
		c.addError(errDBIndex)
	default:
		return int(n), true
	}
	return 0, false
}

// SELECT index
func cmdSelect(c *Client, args [][]byte) {
	if c.srv.cluster != nil {
		// Cluster mode serves database 0 only; the integer checks come
		// first, as in Redis.
		if v, ok := parseInt(args[1]); ok && v >= math.MinInt32 && v <= math.MaxInt32 && v != 0 {
			c.addError("ERR SELECT is not allowed in cluster mode")
			return
		}
	}
	n, ok := c.parseDBIndex(args[1])
	if !ok {
		return
	}
	c.db = n
	c.publishInfo()
	c.addOK()
}

// QUIT
func cmdQuit(c *Client, args [][]byte) {
	c.addOK()
	c.setFlag(clientCloseAfterReply, true)
}

// RESET
func cmdReset(c *Client, args [][]byte) {
	c.multi = nil
	c.setFlag(clientMulti|clientDirtyCAS|clientDirtyExec, false)
	c.srv.watches.unwatchAll(c)
	c.srv.pubsub.unsubscribeAll(c)
	c.srv.monitor.remove(c)
	c.setFlag(clientMonitor|clientNoEvict|clientAsking|clientReadOnly, false)
	c.db = 0
	c.proto = resp.RESP2
	c.replyMode = replyOn
	c.infoMu.Lock()
	c.name = ""
	c.infoMu.Unlock()
	c.publishInfo()
	// Back to the default user, authenticated only if it needs no
	// password (Redis's clientSetDefaultAuth).
	a := &c.srv.acl
	a.Mu.Lock()
	def, gen := a.Reg.Default(), a.Gen.Load()
	a.Mu.Unlock()
	c.aclDeleted = false
	c.setClientUser(def, gen)
	authed := def.NoPass() && def.Enabled()
	c.authed.Store(authed)
	c.rd.SetUnauthenticated(!authed)
	c.addSimple("RESET")
}

// AUTH [username] password
func cmdAuth(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.addError(errSyntax)
		return
	}
	user, pass := "default", string(args[1])
	if len(args) == 3 {
		user, pass = string(args[1]), string(args[2])
	} else {
		c.srv.acl.Mu.Lock()
		nopass := c.srv.acl.Reg.Default().NoPass()
		c.srv.acl.Mu.Unlock()
		if nopass {
			c.addError("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
			return
		}
	}
	if !c.authenticate(string(args[0]), user, pass) {
		c.addError("WRONGPASS invalid username-password pair or user is disabled.")
		return
	}
	c.addOK()
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]
func cmdHello(c *Client, args [][]byte) {
	proto := c.proto
	if len(args) >= 2 {
		v, ok := parseInt(args[1])
		if !ok {
			c.addError("ERR Protocol version is not an integer or out of range")
			return
		}
		if v < 2 || v > 3 {
			c.addError("NOPROTO unsupported protocol version")
			return
		}
		proto = int(v)
	}
	var name *string
	for i := 2; i < len(args); i++ {
		more := len(args) - i - 1
		switch {
		case eqFold(args[i], "AUTH") && more >= 2:
			if !c.authenticate(string(args[0]), string(args[i+1]), string(args[i+2])) {
				c.addError("WRONGPASS invalid username-password pair or user is disabled.")
				return
			}
			i += 2
		case eqFold(args[i], "SETNAME") && more >= 1:
			n := string(args[i+1])
			if !validClientName(n) {
				c.addError("ERR Client names cannot contain spaces, newlines or special characters.")
				return
			}
			name = &n
			i++
		default:
			c.addError("ERR Syntax error in HELLO option '" + string(args[i]) + "'")
			return
		}
	}
	if !c.authed.Load() {
		c.addError("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if name != nil {
		c.infoMu.Lock()
		c.name = *name
		c.infoMu.Unlock()
	}
	c.proto = proto
	c.publishInfo()
	role := "master"
	if c.srv.replicaMode.Load() {
		role = "replica"
	}
	mode := "standalone"
	if c.srv.cfg.Bool(config.DirClusterEnabled) {
		mode = "cluster"
	}
	c.addMapLen(7)
	c.addBulkString("server")
	c.addBulkString("redis")
	c.addBulkString("version")
	c.addBulkString(Version)
	c.addBulkString("proto")
	c.addInt(int64(proto))
	c.addBulkString("id")
	c.addInt(c.id)
	c.addBulkString("mode")
	c.addBulkString(mode)
	c.addBulkString("role")
	c.addBulkString(role)
	c.addBulkString("modules")
	c.addArrayLen(0)
}

// validClientName rejects names with spaces or non-printable characters.
func validClientName(n string) bool {
	for i := 0; i < len(n); i++ {
		if n[i] < '!' || n[i] > '~' {
			return false
		}
	}
	return true
}

var _ = strings.ToLower
var _ = strconv.Itoa
