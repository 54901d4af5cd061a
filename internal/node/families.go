package node

// commandFamilies lists every command family's registration function. Each
// family lives in its own commands_<family>.go file.
var commandFamilies = []func(t *commandTable){
	registerConnectionCommands,
	registerTransactionCommands,
	registerPubSubCommands,
	registerShardPubSubCommands,
	registerClusterCommands,
	registerStringCommands,
	registerKeyCommands,
	registerExpireCommands,
	registerBitopsCommands,
	registerHLLCommands,
	registerGeoCommands,
	registerServerCommands,
	registerFunctionCommands, // after registerServerCommands (FUNCTION)
	registerScriptingCommands,
	registerZSetCommands,
	registerHashCommands,
	registerSetCommands,
	registerListCommands,
	registerStreamCommands,
	registerReplicationCommands,
	registerPersistenceCommands,
	registerDumpCommands,
	registerACLCommands,
	registerLolwutCommands,
}
