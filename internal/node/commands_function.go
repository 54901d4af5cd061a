package node

import (
	"fmt"
	"time"

	"github.com/shardis/shardis/internal/node/script"
	"github.com/shardis/shardis/internal/rdb"
)

// FUNCTION's subcommands and FCALL's handlers. The FUNCTION container
// itself is registered with the server commands; redis-cli --cluster
// add-node copies a cluster's functions to a new node with FUNCTION DUMP
// and FUNCTION RESTORE.
func registerFunctionCommands(t *commandTable) {
	w := flagWrite | flagNoScript
	t.addSub("function", &command{name: "load", arity: -3, flags: w | flagDenyOOM, fn: cmdFunctionLoad, since: "7.0.0"})
	t.addSub("function", &command{name: "delete", arity: 3, flags: w, fn: cmdFunctionDelete, since: "7.0.0"})
	t.addSub("function", &command{name: "flush", arity: -2, flags: w, fn: cmdFunctionFlush, since: "7.0.0"})
	t.addSub("function", &command{name: "restore", arity: -3, flags: w | flagDenyOOM, fn: cmdFunctionRestore, since: "7.0.0"})
	t.addSub("function", &command{name: "dump", arity: 2, flags: flagNoScript, fn: cmdFunctionDump, since: "7.0.0"})
	t.addSub("function", &command{name: "list", arity: -2, flags: flagNoScript, fn: cmdFunctionList, since: "7.0.0"})
	t.addSub("function", &command{name: "stats", arity: 2, flags: flagNoScript | flagAllowBusy, fn: cmdFunctionStats, since: "7.0.0"})
	t.addSub("function", &command{name: "kill", arity: 2, flags: flagNoScript | flagAllowBusy, fn: cmdFunctionKill, since: "7.0.0"})
	t.addSub("function", &command{name: "help", arity: 2, flags: flagLoading | flagStale, fn: cmdFunctionHelp, since: "7.0.0"})
}

// FUNCTION LOAD [REPLACE] function-code
func cmdFunctionLoad(c *Client, args [][]byte) {
	code, replace, msg := script.ParseFunctionLoad(args)
	if msg != "" {
		c.addError(msg)
		return
	}
	name, err := c.srv.scriptEngine().FunctionLoad(code, replace, !c.hasFlag(clientMaster))
	if err != nil {
		c.addError(err.Msg)
		return
	}
	c.markDirty(1)
	c.addBulkString(name)
}

// FUNCTION DELETE library-name
func cmdFunctionDelete(c *Client, args [][]byte) {
	if err := c.srv.scriptEngine().FunctionDelete(string(args[2])); err != nil {
		c.addError(err.Msg)
		return
	}
	c.markDirty(1)
	c.addOK()
}

// FUNCTION FLUSH [ASYNC|SYNC]
func cmdFunctionFlush(c *Client, args [][]byte) {
	if msg := script.ParseFlush(args, true); msg != "" {
		c.addError(msg)
		return
	}
	c.srv.scriptEngine().FunctionFlush()
	c.markDirty(1)
	c.addOK()
}

// functionCodes returns the libraries' codes in name order.
func (s *Server) functionCodes() [][]byte {
	var codes [][]byte
	for _, l := range s.scriptEngine().Libraries() {
		codes = append(codes, l.Code)
	}
	return codes
}

// FUNCTION DUMP
func cmdFunctionDump(c *Client, args [][]byte) {
	c.addBulk(rdb.FunctionsPayload(c.srv.functionCodes()))
}

// FUNCTION RESTORE serialized-value [FLUSH|APPEND|REPLACE]
func cmdFunctionRestore(c *Client, args [][]byte) {
	codes, policy, msg := script.ParseFunctionRestore(args)
	if msg != "" {
		c.addError(msg)
		return
	}
	if err := c.srv.scriptEngine().FunctionRestore(codes, policy); err != nil {
		c.addError(err.Msg)
		return
	}
	c.markDirty(1)
	c.addOK()
}

// FUNCTION LIST [LIBRARYNAME library-name-pattern] [WITHCODE]
func cmdFunctionList(c *Client, args [][]byte) {
	o, msg := script.ParseFunctionList(args)
	if msg != "" {
		c.addError(msg)
		return
	}
	libs := c.srv.scriptEngine().Libraries()
	c.addAppended(func(b []byte, proto int) []byte { return script.AppendFunctionList(b, proto, libs, o) })
}

// FUNCTION STATS
func cmdFunctionStats(c *Client, args [][]byte) {
	var run *script.RunningFunction
	if r := c.srv.scripting.running.Load(); r != nil && !r.eval {
		run = &script.RunningFunction{Name: r.name, Args: r.args, DurationMs: time.Since(r.start).Milliseconds()}
	}
	libs, funcs := c.srv.scriptEngine().FunctionCount()
	c.addAppended(func(b []byte, proto int) []byte { return script.AppendFunctionStats(b, proto, run, libs, funcs) })
}

// FUNCTION KILL
func cmdFunctionKill(c *Client, args [][]byte) { c.killScript(false) }

// FUNCTION HELP
func cmdFunctionHelp(c *Client, args [][]byte) { c.addHelp("FUNCTION", script.FunctionHelp) }

// FCALL function numkeys [key ...] [arg ...]
func cmdFcall(c *Client, args [][]byte) { c.fcallGeneric(args, false) }

// FCALL_RO function numkeys [key ...] [arg ...]
func cmdFcallRO(c *Client, args [][]byte) { c.fcallGeneric(args, true) }

func (c *Client) fcallGeneric(args [][]byte, ro bool) {
	eng := c.srv.scriptEngine()
	f := eng.Function(string(args[1]))
	if f == nil {
		c.addError(script.ErrFunctionNotFound)
		return
	}
	numkeys, msg := script.ParseNumKeys(args, true)
	if msg != "" {
		c.addError(msg)
		return
	}
	c.runScript(&runningScript{name: f.Name}, f.Flags, ro, args, numkeys, func(run *script.Run, out []byte) []byte {
		if eng.Function(f.Name) != f {
			// Deleted or replaced before the gate let this run in.
			return append(out, "-"+script.ErrFunctionNotFound+"\r\n"...)
		}
		return eng.CallFunction(f, run, out)
	})
}

// FunctionCodes is persist.FunctionHooks: the libraries saved in a
// snapshot.
func (h *persistHost) FunctionCodes() [][]byte { return h.s.functionCodes() }

// LoadFunction is persist.FunctionHooks: one library read from an RDB file
// (ours or redis-server's); a library of the same name is replaced.
func (h *persistHost) LoadFunction(code []byte) error {
	if _, err := h.s.scriptEngine().FunctionLoad(code, true, false); err != nil {
		return fmt.Errorf("node: loading a function library from the RDB file: %s", err.Msg)
	}
	return nil
}
