package script

import (
	"errors"
	"strings"

	"github.com/shardis/shardis/internal/node/glob"
	"github.com/shardis/shardis/internal/node/value"
	"github.com/shardis/shardis/internal/rdb"
	"github.com/shardis/shardis/internal/resp"
)

// The grammars and replies of EVAL, FCALL, SCRIPT and FUNCTION that do not
// need the server: the node's handlers parse with these, run the script
// under their own locks and reply with what these return. An error reply
// is returned as its text ("ERR ..."), "" meaning none.

// Errors of the scripting commands, with Redis's texts.
const (
	// ErrNoScript answers EVALSHA of an unknown SHA1.
	ErrNoScript = "NOSCRIPT No matching script. Please use EVAL."
	// ErrBusyEval answers a command refused while an EVAL script runs
	// past busy-reply-threshold, and FUNCTION KILL of an EVAL script.
	ErrBusyEval = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	// ErrBusyFunction is ErrBusyEval's form while a function runs.
	ErrBusyFunction = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
	// ErrNotBusy answers SCRIPT KILL and FUNCTION KILL with no script
	// running.
	ErrNotBusy = "NOTBUSY No scripts in execution right now."
	// ErrUnkillable answers a kill of a script that has written.
	ErrUnkillable = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
	// ErrUnkillableMaster answers a kill of a script run from the
	// master's replication stream.
	ErrUnkillableMaster = "UNKILLABLE The busy script was sent by a master instance in the context of replication and cannot be killed."
	// ErrFunctionNotFound answers FCALL of an unknown function.
	ErrFunctionNotFound = "ERR Function not found"

	errNotInt = "ERR value is not an integer or out of range"
)

// ParseNumKeys parses EVAL's and FCALL's numkeys (args[2]) against the
// number of arguments after it; fcall selects FCALL's error text for a
// numkeys that is not an integer.
func ParseNumKeys(args [][]byte, fcall bool) (int, string) {
	n, ok := value.ParseInt(args[2])
	switch {
	case !ok && fcall:
		return 0, "ERR Bad number of keys provided"
	case !ok:
		return 0, errNotInt
	case n > int64(len(args)-3):
		return 0, "ERR Number of keys can't be greater than number of args"
	case n < 0:
		return 0, "ERR Number of keys can't be negative"
	}
	return int(n), ""
}

// RunState is the server's state a script's declared flags are checked
// against before it runs (Redis's scriptPrepareForRun). The func fields
// are called only when the check reaches them, in Redis's order, since
// OutOfMemory may evict keys; MinReplicasRefused may be nil.
type RunState struct {
	// FromMaster: the script comes from the master's replication stream.
	FromMaster bool
	// RO: called as EVAL_RO, EVALSHA_RO or FCALL_RO.
	RO bool
	// Stale: a replica whose master link is down, with
	// replica-serve-stale-data no.
	Stale bool
	// Cluster: cluster mode is on.
	Cluster bool
	// ReadOnlyReplica: a replica with replica-read-only yes.
	ReadOnlyReplica bool
	// PersistRefused is the MISCONF refusal of writes, or "".
	PersistRefused func() string
	// MinReplicasRefused reports min-replicas-to-write not met.
	MinReplicasRefused func() bool
	// OutOfMemory reports maxmemory set and not enough memory freed.
	OutOfMemory func() bool
}

// Refusal is the error a script with flags f gets instead of running in
// state st, or "".
func (f Flags) Refusal(st *RunState) string {
	if f&FlagEvalCompat != 0 {
		if st.Stale {
			return "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."
		}
		return ""
	}
	if f&FlagNoCluster != 0 && st.Cluster {
		return "ERR Can not run script on cluster, 'no-cluster' flag is set."
	}
	if st.Stale && f&FlagAllowStale == 0 {
		return "MASTERDOWN Link with MASTER is down, replica-serve-stale-data is set to 'no' and 'allow-stale' flag is not set on the script."
	}
	if f&FlagNoWrites != 0 {
		return ""
	}
	if st.ReadOnlyReplica && !st.FromMaster {
		return "READONLY Can not run script with write flag on readonly replica"
	}
	if !st.FromMaster {
		if msg := st.PersistRefused(); msg != "" {
			return msg
		}
	}
	if st.RO {
		return "ERR Can not execute a script with write flag using *_ro command."
	}
	if !st.FromMaster && st.MinReplicasRefused != nil && st.MinReplicasRefused() {
		return "NOREPLICAS Not enough good replicas to write."
	}
	if !st.FromMaster && f&FlagAllowOOM == 0 && st.OutOfMemory() {
		return "OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'"
	}
	return ""
}

// Running is what a kill and FUNCTION STATS see of the running script.
type Running struct {
	// Eval is true for EVAL/EVALSHA, false for FCALL.
	Eval bool
	// FromMaster: run from the master's stream (never killed).
	FromMaster bool
	// Wrote: the script ran a write command.
	Wrote bool
}

// KillRefusal is Redis's scriptKill: the error SCRIPT KILL (eval) or
// FUNCTION KILL gets, or "" when r may be killed; r nil is no script.
func KillRefusal(r *Running, eval bool) string {
	switch {
	case r == nil:
		return ErrNotBusy
	case r.FromMaster:
		return ErrUnkillableMaster
	case r.Wrote:
		return ErrUnkillable
	case eval && !r.Eval:
		return ErrBusyFunction
	case !eval && r.Eval:
		return ErrBusyEval
	}
	return ""
}

// ParseFlush checks SCRIPT FLUSH's or (function) FUNCTION FLUSH's
// [ASYNC|SYNC] (both flush at once).
func ParseFlush(args [][]byte, function bool) string {
	name, only := "SCRIPT", "support"
	if function {
		name, only = "FUNCTION", "supports"
	}
	if len(args) > 3 {
		return "ERR unknown subcommand or wrong number of arguments for 'flush'. Try " + name + " HELP."
	}
	if len(args) == 3 && !eqFold(args[2], "sync") && !eqFold(args[2], "async") {
		return "ERR " + name + " FLUSH only " + only + " SYNC|ASYNC option"
	}
	return ""
}

// ParseFunctionLoad parses FUNCTION LOAD [REPLACE] function-code.
func ParseFunctionLoad(args [][]byte) (code []byte, replace bool, msg string) {
	i := 2
	for ; i < len(args)-1; i++ {
		if !eqFold(args[i], "replace") {
			return nil, false, "ERR Unknown option given: " + string(args[i])
		}
		replace = true
	}
	if i >= len(args) {
		return nil, false, "ERR Function code is missing"
	}
	return args[i], replace, ""
}

// ParseFunctionRestore parses FUNCTION RESTORE serialized-value
// [FLUSH|APPEND|REPLACE] and decodes the payload (FUNCTION DUMP's format,
// redis-server's too) into the libraries' codes.
func ParseFunctionRestore(args [][]byte) (codes [][]byte, policy RestorePolicy, msg string) {
	if len(args) > 4 {
		return nil, 0, "ERR unknown subcommand or wrong number of arguments for '" + truncArg(args[1]) + "'. Try FUNCTION HELP."
	}
	policy = RestoreAppend
	if len(args) == 4 {
		switch {
		case eqFold(args[3], "append"):
		case eqFold(args[3], "replace"):
			policy = RestoreReplace
		case eqFold(args[3], "flush"):
			policy = RestoreFlush
		default:
			return nil, 0, "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."
		}
	}
	codes, badType, err := rdb.ParseFunctionsPayload(args[2])
	switch {
	case errors.Is(err, rdb.ErrFunctionsPayload):
		return nil, 0, "ERR DUMP payload version or checksum are wrong"
	case err != nil:
		return nil, 0, "ERR failed loading the given functions payload"
	case badType:
		return nil, 0, "ERR given type is not a function"
	}
	return codes, policy, ""
}

func eqFold(a []byte, s string) bool { return strings.EqualFold(string(a), s) }

// truncArg is an argument as an error text quotes it: at most 128 bytes,
// CR and LF as spaces.
func truncArg(a []byte) string {
	s := string(a)
	if len(s) > 128 {
		s = s[:128]
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r", " "), "\n", " ")
}

// FunctionList is FUNCTION LIST's options.
type FunctionList struct {
	// Pattern filters the libraries by name (a case-insensitive glob)
	// when HavePattern.
	Pattern     string
	HavePattern bool
	// WithCode adds each library's code.
	WithCode bool
}

// ParseFunctionList parses FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
func ParseFunctionList(args [][]byte) (FunctionList, string) {
	var o FunctionList
	for i := 2; i < len(args); i++ {
		if !o.WithCode && eqFold(args[i], "withcode") {
			o.WithCode = true
			continue
		}
		if !o.HavePattern && eqFold(args[i], "libraryname") {
			if i >= len(args)-1 {
				return o, "ERR library name argument was not given"
			}
			i++
			o.Pattern, o.HavePattern = string(args[i]), true
			continue
		}
		return o, "ERR Unknown argument " + string(args[i])
	}
	return o, ""
}

// AppendFunctionList appends FUNCTION LIST's reply for all (in name
// order), filtered and shaped by o.
func AppendFunctionList(b []byte, proto int, all []*Library, o FunctionList) []byte {
	var libs []*Library
	for _, l := range all {
		if !o.HavePattern || glob.Match(o.Pattern, l.Name, true) {
			libs = append(libs, l)
		}
	}
	b = resp.AppendArrayLen(b, len(libs))
	for _, l := range libs {
		if o.WithCode {
			b = resp.AppendMapLen(b, proto, 4)
		} else {
			b = resp.AppendMapLen(b, proto, 3)
		}
		b = resp.AppendBulkString(b, "library_name")
		b = resp.AppendBulkString(b, l.Name)
		b = resp.AppendBulkString(b, "engine")
		b = resp.AppendBulkString(b, "LUA")
		b = resp.AppendBulkString(b, "functions")
		b = resp.AppendArrayLen(b, len(l.Functions))
		for _, f := range l.Functions {
			b = resp.AppendMapLen(b, proto, 3)
			b = resp.AppendBulkString(b, "name")
			b = resp.AppendBulkString(b, f.Name)
			b = resp.AppendBulkString(b, "description")
			if f.Desc == "" {
				b = resp.AppendNull(b, proto)
			} else {
				b = resp.AppendBulkString(b, f.Desc)
			}
			b = resp.AppendBulkString(b, "flags")
			names := f.Flags.FlagNames()
			b = resp.AppendSetLen(b, proto, len(names))
			for _, n := range names {
				b = resp.AppendSimple(b, n)
			}
		}
		if o.WithCode {
			b = resp.AppendBulkString(b, "library_code")
			b = resp.AppendBulk(b, l.Code)
		}
	}
	return b
}

// RunningFunction is the function FUNCTION STATS shows as running.
type RunningFunction struct {
	Name string
	// Args is the FCALL that runs it.
	Args [][]byte
	// DurationMs is how long it has run.
	DurationMs int64
}

// AppendFunctionStats appends FUNCTION STATS's reply: the running
// function (nil: none) and the number of libraries and functions.
func AppendFunctionStats(b []byte, proto int, r *RunningFunction, libs, funcs int) []byte {
	b = resp.AppendMapLen(b, proto, 2)
	b = resp.AppendBulkString(b, "running_script")
	if r == nil {
		b = resp.AppendNull(b, proto)
	} else {
		b = resp.AppendMapLen(b, proto, 3)
		b = resp.AppendBulkString(b, "name")
		b = resp.AppendBulkString(b, r.Name)
		b = resp.AppendBulkString(b, "command")
		b = resp.AppendArrayLen(b, len(r.Args))
		for _, a := range r.Args {
			b = resp.AppendBulk(b, a)
		}
		b = resp.AppendBulkString(b, "duration_ms")
		b = resp.AppendInt(b, r.DurationMs)
	}
	b = resp.AppendBulkString(b, "engines")
	b = resp.AppendMapLen(b, proto, 1)
	b = resp.AppendBulkString(b, "LUA")
	b = resp.AppendMapLen(b, proto, 2)
	b = resp.AppendBulkString(b, "libraries_count")
	b = resp.AppendInt(b, int64(libs))
	b = resp.AppendBulkString(b, "functions_count")
	return resp.AppendInt(b, int64(funcs))
}

// ScriptHelp is SCRIPT HELP's text.
var ScriptHelp = []string{
	"DEBUG (YES|SYNC|NO)",
	"    Set the debug mode for subsequent scripts executed.",
	"EXISTS <sha1> [<sha1> ...]",
	"    Return information about the existence of the scripts in the script cache.",
	"FLUSH [ASYNC|SYNC]",
	"    Flush the Lua scripts cache. Very dangerous on replicas.",
	"    When called without the optional mode argument, the behavior is determined by the",
	"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the scripts cache.",
	"    * SYNC: Synchronously flush the scripts cache.",
	"KILL",
	"    Kill the currently executing Lua script.",
	"LOAD <script>",
	"    Load a script into the scripts cache without executing it.",
}

// FunctionHelp is FUNCTION HELP's text.
var FunctionHelp = []string{
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
}
