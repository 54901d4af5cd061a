package node

// registerModuleCommands adds MODULE. shardnode loads no modules: the
// command exists so that MODULE LOAD, LOADEX and UNLOAD are refused as Redis
// 7.0 refuses them (enable-module-command, security.go), and answer as a
// Redis without modules where they are allowed.
func registerModuleCommands(t *commandTable) {
	t.add(&command{name: "module", arity: -2, fn: cmdHelpDispatch, group: "server", since: "4.0.0"})
	t.addSub("module", &command{name: "help", arity: 2, flags: flagLoading | flagStale, fn: cmdModuleHelp})
	t.addSub("module", &command{name: "list", arity: 2, flags: flagAdmin | flagNoScript, fn: cmdModuleList})
	pf := flagAdmin | flagNoScript | flagProtected
	t.addSub("module", &command{name: "load", arity: -3, flags: pf, fn: cmdModuleLoad})
	t.addSub("module", &command{name: "loadex", arity: -3, flags: pf, fn: cmdModuleLoad})
	t.addSub("module", &command{name: "unload", arity: 3, flags: pf, fn: cmdModuleUnload})
}

// MODULE HELP
func cmdModuleHelp(c *Client, args [][]byte) {
	c.addHelp("MODULE", []string{
		"LIST",
		"    Return a list of loaded modules.",
		"LOAD <path> [<arg> ...]",
		"    Load a module library from <path>, passing to it any optional arguments.",
		"LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
		"    Load a module library from <path>, while passing it module configurations and optional arguments.",
		"UNLOAD <name>",
		"    Unload a module.",
	})
}

// MODULE LIST: no module is ever loaded.
func cmdModuleList(c *Client, args [][]byte) { c.addArrayLen(0) }

// MODULE LOAD|LOADEX path [...]: Redis's answer to a library it cannot load.
func cmdModuleLoad(c *Client, args [][]byte) {
	c.addError("ERR Error loading the extension. Please check the server logs.")
}

// MODULE UNLOAD name: Redis's answer for a name that is not loaded.
func cmdModuleUnload(c *Client, args [][]byte) {
	c.addError("ERR Error unloading module: no such module with that name")
}
