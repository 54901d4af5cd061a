package node

// registerZSetBlockingCommands registers BZPOPMIN, BZPOPMAX and BZMPOP.
func registerZSetBlockingCommands(t *commandTable) {}
