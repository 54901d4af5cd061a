package consistent

import (
	"github.com/cespare/xxhash/v2"
	jump "github.com/dgryski/go-jump"
)

// Jump places keys with Google's jump consistent hash (Lamping and Veach,
// 2014). A key is first hashed to 64 bits with XXH64 (seed 0) over its
// bytes. Growing the shard count from n to n+1 moves about 1/(n+1) of the
// keys, all of them to the new shard; shards can only be added or removed
// at the end of the list. Jump is not compatible with Jedis.
type Jump struct {
	n int
}

var _ Hash = (*Jump)(nil)

// NewJump returns a jump hash over n shards. It panics if n < 1.
func NewJump(n int) *Jump {
	if n < 1 {
		panic("consistent: NewJump needs at least one shard")
	}
	return &Jump{n: n}
}

// Get returns the shard index, in [0, n), of key.
func (j *Jump) Get(key string) int {
	return int(jump.Hash(xxhash.Sum64String(key), j.n))
}
