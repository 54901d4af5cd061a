package runner

import (
	"strings"

	"github.com/shardis/shardis/internal/resp"
)

// sentinelCommands is redis-sentinel 7.0's command table as COMMAND LIST
// reports it: 15 commands and their subcommands.
var sentinelCommands = strings.Fields(`acl acl|cat acl|deluser acl|dryrun acl|genpass acl|getuser acl|help
acl|list acl|load acl|log acl|save acl|setuser acl|users acl|whoami auth client client|caching client|getname
client|getredir client|help client|id client|info client|kill client|list client|no-evict client|pause
client|reply client|setname client|tracking client|trackinginfo client|unblock client|unpause command
command|count command|docs command|getkeys command|getkeysandflags command|help command|info command|list
hello info ping psubscribe publish punsubscribe role sentinel sentinel|ckquorum sentinel|config sentinel|debug
sentinel|failover sentinel|flushconfig sentinel|get-master-addr-by-name sentinel|help sentinel|info-cache
sentinel|is-master-down-by-addr sentinel|master sentinel|masters sentinel|monitor sentinel|myid
sentinel|pending-scripts sentinel|remove sentinel|replicas sentinel|reset sentinel|sentinels sentinel|set
sentinel|simulate-failure sentinel|slaves shutdown subscribe unsubscribe`)

// cmdCommand serves COMMAND COUNT and COMMAND LIST; other forms get empty
// replies (no command metadata is served).
func cmdCommand(args []string) []byte {
	if len(args) >= 2 {
		switch strings.ToUpper(args[1]) {
		case "COUNT":
			n := 0
			for _, c := range sentinelCommands {
				if !strings.Contains(c, "|") {
					n++
				}
			}
			return resp.AppendInt(nil, int64(n))
		case "LIST":
			b := resp.AppendArrayLen(nil, len(sentinelCommands))
			for _, c := range sentinelCommands {
				b = resp.AppendBulkString(b, c)
			}
			return b
		}
	}
	return resp.AppendArrayLen(nil, 0)
}
