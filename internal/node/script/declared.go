package script

// DeclaredFlags returns the flags the script of a call of the command
// name declares: an EVAL's (its shebang), an EVALSHA's (the cached
// script's) or an FCALL's (the function's); ok is false for a script
// without a shebang, one not found, or another command. eng gives the
// engine, asked for only when the call names a cached script or a
// function.
func DeclaredFlags(name string, args [][]byte, eng func() *Engine) (Flags, bool) {
	if len(args) < 2 {
		return 0, false
	}
	var f Flags
	switch name {
	case "eval", "eval_ro":
		if len(args[1]) < 2 || args[1][0] != '#' || args[1][1] != '!' {
			return 0, false
		}
		var err *Error
		if f, _, err = ParseShebang(args[1]); err != nil {
			return 0, false
		}
	case "evalsha", "evalsha_ro":
		sc := eng().LookupBytes(args[1])
		if sc == nil {
			return 0, false
		}
		f = sc.Flags
	case "fcall", "fcall_ro":
		fn := eng().Function(string(args[1]))
		if fn == nil {
			return 0, false
		}
		return fn.Flags, true
	default:
		return 0, false
	}
	return f, f&FlagEvalCompat == 0
}

// EvalWrites reports whether a call of the command name, an EVAL or
// EVALSHA, runs a script that declared flags without no-writes: Redis's
// evalGetCommandFlags then gives the command the write flag. eng gives
// the engine, asked for only for an EVALSHA.
func EvalWrites(name string, args [][]byte, eng func() *Engine) bool {
	if len(args) < 2 || (name != "eval" && name != "evalsha") {
		return false
	}
	var flags Flags
	if name == "eval" {
		f, _, err := ParseShebang(args[1])
		if err != nil {
			return false
		}
		flags = f
	} else if sc := eng().Lookup(string(args[1])); sc != nil {
		flags = sc.Flags
	} else {
		return false
	}
	return flags&FlagEvalCompat == 0 && flags&FlagNoWrites == 0
}
