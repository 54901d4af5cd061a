package node

import "github.com/shardis/shardis/internal/consistent"

// keySlot is the key's Redis Cluster hash slot (consistent.KeySlot: CRC16
// of its {hash tag}, computed 8 bytes at a time), computed for every
// lookup to find the key's shard.
func keySlot(key string) int { return consistent.KeySlot(key) }
