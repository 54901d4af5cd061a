// Package consistent places keys on shards.
//
// It offers three placements:
//
//   - [Murmur], a consistent-hash ring that reproduces, bit for bit, where
//     Jedis's Sharded / ShardedJedisPool classes put a key, so Go and Java
//     services can share one pre-sharded deployment;
//   - [Jump], Google's jump consistent hash, for deployments that do not need
//     Jedis compatibility;
//   - [KeySlot], the Redis Cluster CRC16 slot of a key with its {hash tag}.
//
// [Murmur] and [Jump] satisfy the small [Hash] interface.
package consistent

// Hash maps a key to a shard index in [0, number of shards).
// Implementations are safe for concurrent use.
type Hash interface {
	// Get returns the index of the shard that owns key.
	Get(key string) int
}
