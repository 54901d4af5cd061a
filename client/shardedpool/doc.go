// Package shardedpool is a client for a pre-sharded Redis deployment: keys
// are spread over several master/replica groups by consistent hashing, and
// each group's master is followed through Redis Sentinel failovers.
//
// Keys are placed exactly where Jedis's ShardedJedisSentinelPool places
// them (MurmurHash64A ring, 160 points per unit of weight), so Go and Java
// services can share one deployment. The ring depends only on the shard
// list: a key never moves because a master is down.
//
// Each shard has its own go-redis client. When a Sentinel announces
// +switch-master, the pool re-reads the master from every Sentinel (the
// highest config epoch wins), confirms with ROLE that the new address is a
// master, and swaps only that shard's client; the old client is closed
// after a grace period. After any Sentinel (re)connection every master is
// re-queried, because events can be missed, and a Sentinel with an older
// config epoch can never move a shard backwards.
//
// Without Sentinel, the shards can be a static list or a topology file
// that is watched and applied live.
//
// [Pool] implements go-redis's [redis.Cmdable]: single-key commands are
// routed by their key; MGET, MSET, DEL, EXISTS, UNLINK and TOUCH are split
// per shard and merged; other multi-key commands run when all their keys
// are on one shard and otherwise fail with an error naming the shards.
package shardedpool
