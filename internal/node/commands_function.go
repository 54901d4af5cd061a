package node

import (
	"errors"
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
	replace := false
	i := 2
	for ; i < len(args)-1; i++ {
		if !eqFold(args[i], "replace") {
			c.addError("ERR Unknown option given: " + string(args[i]))
			return
		}
		replace = true
	}
	if i >= len(args) {
		c.addError("ERR Function code is missing")
		return
	}
	var name string
	var err *script.Error
	name, err = c.srv.scriptEngine().FunctionLoad(args[i], replace, !c.hasFlag(clientMaster))
	if err != nil {
		c.addError(err.Msg)
		return
	}
	c.markDirty(1)
	c.addBulkString(name)
}

// FUNCTION DELETE library-name
func cmdFunctionDelete(c *Client, args [][]byte) {
	var err *script.Error
	err = c.srv.scriptEngine().FunctionDelete(string(args[2]))
	if err != nil {
		c.addError(err.Msg)
		return
	}
	c.markDirty(1)
	c.addOK()
}

// FUNCTION FLUSH [ASYNC|SYNC]
func cmdFunctionFlush(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.addError("ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP.")
		return
	}
	if len(args) == 3 && !eqFold(args[2], "sync") && !eqFold(args[2], "async") {
		c.addError("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
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
	if len(args) > 4 {
		c.addError("ERR unknown subcommand or wrong number of arguments for '" + truncArg(args[1]) + "'. Try FUNCTION HELP.")
		return
	}
	policy := script.RestoreAppend
	if len(args) == 4 {
		switch {
		case eqFold(args[3], "append"):
		case eqFold(args[3], "replace"):
			policy = script.RestoreReplace
		case eqFold(args[3], "flush"):
			policy = script.RestoreFlush
		default:
			c.addError("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
			return
		}
	}
	codes, badType, err := rdb.ParseFunctionsPayload(args[2])
	switch {
	case errors.Is(err, rdb.ErrFunctionsPayload):
		c.addError("ERR DUMP payload version or checksum are wrong")
		return
	case err != nil:
		c.addError("ERR failed loading the given functions payload")
		return
	case badType:
		c.addError("ERR given type is not a function")
		return
	}
	var serr *script.Error
	serr = c.srv.scriptEngine().FunctionRestore(codes, policy)
	if serr != nil {
		c.addError(serr.Msg)
		return
	}
	c.markDirty(1)
	c.addOK()
}

// FUNCTION LIST [LIBRARYNAME library-name-pattern] [WITHCODE]
func cmdFunctionList(c *Client, args [][]byte) {
	withCode := false
	pattern, havePattern := "", false
	for i := 2; i < len(args); i++ {
		if !withCode && eqFold(args[i], "withcode") {
			withCode = true
			continue
		}
		if !havePattern && eqFold(args[i], "libraryname") {
			if i >= len(args)-1 {
				c.addError("ERR library name argument was not given")
				return
			}
			i++
			pattern, havePattern = string(args[i]), true
			continue
		}
		c.addError("ERR Unknown argument " + string(args[i]))
		return
	}
	var libs []*script.Library
	for _, l := range c.srv.scriptEngine().Libraries() {
		if !havePattern || globMatch(pattern, l.Name, true) {
			libs = append(libs, l)
		}
	}
	c.addArrayLen(len(libs))
	for _, l := range libs {
		if withCode {
			c.addMapLen(4)
		} else {
			c.addMapLen(3)
		}
		c.addBulkString("library_name")
		c.addBulkString(l.Name)
		c.addBulkString("engine")
		c.addBulkString("LUA")
		c.addBulkString("functions")
		c.addArrayLen(len(l.Functions))
		for _, f := range l.Functions {
			c.addMapLen(3)
			c.addBulkString("name")
			c.addBulkString(f.Name)
			c.addBulkString("description")
			if f.Desc == "" {
				c.addNull()
			} else {
				c.addBulkString(f.Desc)
			}
			c.addBulkString("flags")
			names := f.Flags.FlagNames()
			c.addSetLen(len(names))
			for _, n := range names {
				c.addSimple(n)
			}
		}
		if withCode {
			c.addBulkString("library_code")
			c.addBulk(l.Code)
		}
	}
}

// FUNCTION STATS
func cmdFunctionStats(c *Client, args [][]byte) {
	c.addMapLen(2)
	c.addBulkString("running_script")
	if r := c.srv.scripting.running.Load(); r == nil || r.eval {
		c.addNull()
	} else {
		c.addMapLen(3)
		c.addBulkString("name")
		c.addBulkString(r.name)
		c.addBulkString("command")
		c.addBulks(r.args)
		c.addBulkString("duration_ms")
		c.addInt(time.Since(r.start).Milliseconds())
	}
	libs, funcs := c.srv.scriptEngine().FunctionCount()
	c.addBulkString("engines")
	c.addMapLen(1)
	c.addBulkString("LUA")
	c.addMapLen(2)
	c.addBulkString("libraries_count")
	c.addInt(int64(libs))
	c.addBulkString("functions_count")
	c.addInt(int64(funcs))
}

// FUNCTION KILL
func cmdFunctionKill(c *Client, args [][]byte) { c.killScript(false) }

// FUNCTION HELP
func cmdFunctionHelp(c *Client, args [][]byte) {
	c.addHelp("FUNCTION", []string{
		"LOAD [REPLACE] <FUNCTION CODE>",
		"    Create a new library with the given library name and code.",
		"DELETE <LIBRARY NAME>",
		"    Delete the given library.",
		"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
		"    Return general information on all the libraries:",
		"    * Library name",
		"    * The engine used to run the Library",
		"    * Library description",
		"    * Functions list",
		"    * Library code (if WITHCODE is given)",
		"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
		"STATS",
		"    Return information about the current function running:",
		"    * Function name",
		"    * Command used to run the function",
		"    * Duration in MS that the function is running",
		"    If no function is running, return nil",
		"    In addition, returns a list of available engines.",
		"KILL",
		"    Kill the current running function.",
		"FLUSH [ASYNC|SYNC]",
		"    Delete all the libraries.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the libraries.",
		"    * SYNC: Synchronously flush the libraries.",
		"DUMP",
		"    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
		"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
		"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
		"    control how to handle existing libraries (default APPEND):",
		"    * FLUSH: delete all existing libraries.",
		"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
		"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
		"      libraries with the new libraries (notice that even on this option there is a chance of failure",
		"      in case of functions name collision with another library).",
	})
}

// FCALL function numkeys [key ...] [arg ...]
func cmdFcall(c *Client, args [][]byte) { c.fcallGeneric(args, false) }

// FCALL_RO function numkeys [key ...] [arg ...]
func cmdFcallRO(c *Client, args [][]byte) { c.fcallGeneric(args, true) }

func (c *Client) fcallGeneric(args [][]byte, ro bool) {
	eng := c.srv.scriptEngine()
	f := eng.Function(string(args[1]))
	if f == nil {
		c.addError("ERR Function not found")
		return
	}
	numkeys, ok := c.scriptNumKeys(args, true)
	if !ok {
		return
	}
	c.runScript(&runningScript{name: f.Name}, f.Flags, ro, args, numkeys, func(run *script.Run, out []byte) []byte {
		if eng.Function(f.Name) != f {
			// Deleted or replaced before the gate let this run in.
			return append(out, "-ERR Function not found\r\n"...)
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
