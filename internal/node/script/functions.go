package script

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// loadTimeout bounds the run of a library's code in FUNCTION LOAD, as
// Redis's LOAD_TIMEOUT_MS.
const loadTimeout = 500 * time.Millisecond

// Library is a loaded FUNCTION library.
type Library struct {
	// Name is the library's name from its shebang.
	Name string
	// Code is the library's source, shebang included.
	Code []byte
	// Functions are the library's functions in registration order.
	Functions []*Function
	fe        *fnEngine
}

// Function is one function of a library.
type Function struct {
	// Name is the name FCALL uses.
	Name string
	// Desc is the description given to register_function (may be empty).
	Desc string
	// Flags are the function's declared flags.
	Flags Flags
	// Lib is the library holding the function.
	Lib *Library
	fn  *lua.LFunction
}

// fnEngine holds the libraries and the Lua state they are loaded into
// (one for all, as Redis's; Engine.fnMu serialises its use).
type fnEngine struct {
	libs  map[string]*Library
	funcs map[string]*Function // by lower-case name: FCALL ignores case
	st    *state
	// loadAPI is the global table a library's code sees while it loads.
	loadAPI *lua.LTable
}

// loadCtx is a FUNCTION LOAD in progress.
type loadCtx struct {
	lib *Library
}

func (e *Engine) functions() *fnEngine {
	if e.fn == nil {
		st, api := e.newLibraryState()
		e.fn = &fnEngine{libs: make(map[string]*Library), funcs: make(map[string]*Function), st: st, loadAPI: api}
	}
	return e.fn
}

// newLibraryState returns the functions' state and the global table
// its code sees while it loads: only redis.register_function, redis.log
// and the version, as Redis's load-time API.
func (e *Engine) newLibraryState() (*state, *lua.LTable) {
	st := newState(e, true)
	L := st.L
	api := L.NewTable()
	api.RawSetString("register_function", L.NewFunction(st.registerFunction))
	registerLog(st, api)
	registerVersion(api)
	api.Metatable = errorMetatable(L)
	globals := L.NewTable()
	globals.RawSetString("redis", st.protect(api))
	globals.Metatable = errorMetatable(L)
	return st, globals
}

func errorMetatable(L *lua.LState) *lua.LTable {
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.ToString(2))
		return 0
	}))
	return mt
}

// validName is functionsVerifyName: letters, digits and '_', not empty.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

const errBadName = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"

// libMeta parses a library's "#!<engine> name=<name>" line.
func libMeta(code []byte) (engine, name string, body []byte, err *Error) {
	if !bytes.HasPrefix(code, []byte("#!")) {
		return "", "", nil, &Error{"ERR Missing library metadata"}
	}
	end := bytes.IndexByte(code, '\n')
	if end < 0 {
		return "", "", nil, &Error{"ERR Invalid library metadata"}
	}
	parts, ok := splitArgs(code[:end])
	if !ok || len(parts) == 0 {
		return "", "", nil, &Error{"ERR Invalid library metadata"}
	}
	engine = parts[0][2:]
	seen := false
	for _, p := range parts[1:] {
		if len(p) >= 5 && strings.EqualFold(p[:5], "name=") {
			if seen {
				return "", "", nil, &Error{"ERR Invalid metadata value, name argument was given multiple times"}
			}
			name, seen = p[5:], true
			continue
		}
		return "", "", nil, errf("ERR Invalid metadata value given: %s", p)
	}
	if !seen {
		return "", "", nil, &Error{"ERR Library name was not given"}
	}
	return engine, name, code[end:], nil
}

// compileLibrary runs a library's code and returns the library with the
// functions it registered; it does not install it.
func (e *Engine) compileLibrary(code []byte, timeout time.Duration) (*Library, *Error) {
	engine, name, body, merr := libMeta(code)
	if merr != nil {
		return nil, merr
	}
	if !validName(name) {
		return nil, &Error{errBadName}
	}
	if !strings.EqualFold(engine, "lua") {
		return nil, errf("ERR Engine '%s' not found", engine)
	}
	e.fnMu.Lock()
	defer e.fnMu.Unlock()
	e.mu.Lock()
	fe := e.functions()
	e.mu.Unlock()
	st, loadAPI := fe.st, fe.loadAPI
	L := st.L
	proto, err := compile(body, "user_function")
	if err != nil {
		return nil, errf("ERR Error compiling function: %s", compileErrText(err))
	}
	lib := &Library{Name: name, Code: bytes.Clone(code), fe: fe}
	fn := L.NewFunctionFromProto(proto)
	fn.Env = st.env
	st.envMeta.RawSetString("__index", loadAPI)
	st.load = &loadCtx{lib: lib}
	var cancel context.CancelFunc
	if timeout > 0 {
		var ctx context.Context
		ctx, cancel = context.WithTimeout(context.Background(), timeout)
		L.SetContext(ctx)
	}
	L.Push(fn)
	perr := L.PCall(0, 0, nil)
	if cancel != nil {
		L.RemoveContext()
		cancel()
	}
	st.load = nil
	st.envMeta.RawSetString("__index", st.real)
	L.SetTop(0)
	if perr != nil {
		msg := perr.Error()
		if ae, ok := perr.(*lua.ApiError); ok {
			if t, ok := ae.Object.(*lua.LTable); ok {
				if s, ok := t.RawGetString("err").(lua.LString); ok {
					msg = string(s)
				}
			} else {
				msg = "ERR " + ae.Object.String()
			}
		}
		if strings.Contains(msg, "context deadline exceeded") {
			msg = "ERR FUNCTION LOAD timeout"
		}
		return nil, errf("ERR Error registering functions: %s", msg)
	}
	if len(lib.Functions) == 0 {
		return nil, &Error{"ERR No functions registered"}
	}
	return lib, nil
}

// registerFunction is redis.register_function(name, callback) or
// redis.register_function{function_name=..., callback=..., flags=...,
// description=...}.
func (st *state) registerFunction(L *lua.LState) int {
	if st.load == nil {
		return raise(L, "redis.register_function can only be called on FUNCTION LOAD command")
	}
	n := L.GetTop()
	if n < 1 || n > 2 {
		return raise(L, "wrong number of arguments to redis.register_function")
	}
	f := &Function{Lib: st.load.lib}
	if n == 2 {
		name, ok := L.Get(1).(lua.LString)
		if !ok {
			if num, isNum := L.Get(1).(lua.LNumber); isNum {
				name, ok = lua.LString(num.String()), true
			}
		}
		if !ok {
			return raise(L, "first argument to redis.register_function must be a string")
		}
		cb, ok := L.Get(2).(*lua.LFunction)
		if !ok {
			return raise(L, "second argument to redis.register_function must be a function")
		}
		f.Name, f.fn = string(name), cb
	} else {
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			return raise(L, "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
		}
		var errMsg string
		forEach(t, func(k, v lua.LValue) {
			if errMsg != "" {
				return
			}
			ks, ok := k.(lua.LString)
			if !ok {
				errMsg = "named argument key given to redis.register_function is not a string"
				return
			}
			switch strings.ToLower(string(ks)) {
			case "function_name":
				s, ok := v.(lua.LString)
				if !ok {
					errMsg = "function_name argument given to redis.register_function must be a string"
					return
				}
				f.Name = string(s)
			case "description":
				s, ok := v.(lua.LString)
				if !ok {
					errMsg = "description argument given to redis.register_function must be a string"
					return
				}
				f.Desc = string(s)
			case "callback":
				cb, ok := v.(*lua.LFunction)
				if !ok {
					errMsg = "callback argument given to redis.register_function must be a function"
					return
				}
				f.fn = cb
			case "flags":
				ft, ok := v.(*lua.LTable)
				if !ok {
					errMsg = "flags argument to redis.register_function must be a table representing function flags"
					return
				}
				for i := 1; ; i++ {
					fv := ft.RawGetInt(i)
					if fv == lua.LNil {
						break
					}
					s, ok := fv.(lua.LString)
					fl, known := flagByName(string(s), true)
					if !ok || !known {
						errMsg = "unknown flag given"
						return
					}
					f.Flags |= fl
				}
			default:
				errMsg = "unknown argument given to redis.register_function"
			}
		})
		if errMsg != "" {
			return raise(L, errMsg)
		}
		if f.Name == "" && errMsg == "" {
			return raise(L, "redis.register_function must get a function name argument")
		}
		if f.fn == nil {
			return raise(L, "redis.register_function must get a callback argument")
		}
	}
	if !validName(f.Name) {
		return raise(L, errBadName[4:])
	}
	for _, g := range st.load.lib.Functions {
		if g.Name == f.Name {
			return raise(L, "Function already exists in the library")
		}
	}
	st.load.lib.Functions = append(st.load.lib.Functions, f)
	return 0
}

// FunctionLoad compiles and installs a library (FUNCTION LOAD [REPLACE]);
// timeout 0 runs its code without a time limit (a master's stream, AOF).
func (e *Engine) FunctionLoad(code []byte, replace bool, timeout bool) (string, *Error) {
	t := loadTimeout
	if !timeout {
		t = 0
	}
	lib, err := e.compileLibrary(code, t)
	if err != nil {
		return "", err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	fe := e.functions()
	old := fe.libs[lib.Name]
	if old != nil && !replace {
		return "", errf("ERR Library '%s' already exists", lib.Name)
	}
	for _, f := range lib.Functions {
		if g := fe.funcs[strings.ToLower(f.Name)]; g != nil && g.Lib != old {
			return "", errf("ERR Function %s already exists", f.Name)
		}
	}
	fe.install(lib, old)
	return lib.Name, nil
}

func (fe *fnEngine) install(lib, old *Library) {
	if old != nil {
		for _, f := range old.Functions {
			delete(fe.funcs, strings.ToLower(f.Name))
		}
	}
	fe.libs[lib.Name] = lib
	for _, f := range lib.Functions {
		fe.funcs[strings.ToLower(f.Name)] = f
	}
}

// FunctionDelete removes a library (FUNCTION DELETE).
func (e *Engine) FunctionDelete(name string) *Error {
	e.mu.Lock()
	defer e.mu.Unlock()
	fe := e.functions()
	lib := fe.libs[name]
	if lib == nil {
		return &Error{"ERR Library not found"}
	}
	for _, f := range lib.Functions {
		delete(fe.funcs, strings.ToLower(f.Name))
	}
	delete(fe.libs, name)
	return nil
}

// FunctionFlush removes every library (FUNCTION FLUSH).
func (e *Engine) FunctionFlush() {
	e.fnMu.Lock()
	defer e.fnMu.Unlock()
	e.mu.Lock()
	e.fn = nil // a new Lua state for the next library
	e.mu.Unlock()
}

// Function returns the function FCALL name runs, or nil.
func (e *Engine) Function(name string) *Function {
	if e.fn == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fn.funcs[strings.ToLower(name)]
}

// Libraries returns the libraries sorted by name.
func (e *Engine) Libraries() []*Library {
	if e.fn == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]*Library, 0, len(e.fn.libs))
	for _, l := range e.fn.libs {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b *Library) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// FunctionCount returns the number of libraries and functions.
func (e *Engine) FunctionCount() (libs, funcs int) {
	if e.fn == nil {
		return 0, 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.fn.libs), len(e.fn.funcs)
}

// RestorePolicy is FUNCTION RESTORE's policy.
type RestorePolicy int

// FUNCTION RESTORE policies.
const (
	RestoreAppend RestorePolicy = iota
	RestoreReplace
	RestoreFlush
)

// FunctionRestore installs the libraries whose codes a FUNCTION DUMP
// payload (or an RDB file) holds, all or none.
func (e *Engine) FunctionRestore(codes [][]byte, policy RestorePolicy) *Error {
	libs := make([]*Library, 0, len(codes))
	for _, code := range codes {
		lib, err := e.compileLibrary(code, 0)
		if err != nil {
			return err
		}
		libs = append(libs, lib)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	fe := e.functions()
	libsAfter := make(map[string]*Library)
	if policy != RestoreFlush {
		for n, l := range fe.libs {
			libsAfter[n] = l
		}
	}
	for _, lib := range libs {
		if libsAfter[lib.Name] != nil && policy == RestoreAppend {
			return errf("ERR Library %s already exists", lib.Name)
		}
		libsAfter[lib.Name] = lib
	}
	funcs := make(map[string]*Function)
	for _, l := range libsAfter {
		for _, f := range l.Functions {
			if g := funcs[strings.ToLower(f.Name)]; g != nil {
				return errf("ERR Function %s already exists", f.Name)
			}
			funcs[strings.ToLower(f.Name)] = f
		}
	}
	fe.libs, fe.funcs = libsAfter, funcs
	return nil
}

// CallFunction runs f (FCALL) and appends its reply to out.
func (e *Engine) CallFunction(f *Function, run *Run, out []byte) []byte {
	e.fnMu.Lock()
	defer e.fnMu.Unlock()
	st := f.Lib.fe.st
	if run.Name == "" {
		run.Name = f.Name
	}
	args := []lua.LValue{strArray(st.L, run.Keys), strArray(st.L, run.Args)}
	return st.call(f.fn, run, args, out)
}
