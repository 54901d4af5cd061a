package consistent

import (
	"encoding/binary"
	"slices"
	"strconv"
	"unicode/utf8"
)

// murmurSeed is the seed Jedis's Hashing.MURMUR_HASH passes to MurmurHash64A.
const murmurSeed = 0x1234ABCD

// vnodesPerWeight is the number of ring points Jedis creates per unit of weight.
const vnodesPerWeight = 160

// MurmurHash64A returns Austin Appleby's MurmurHash64A of b with the given
// seed, reading 8-byte blocks little-endian, as Jedis's MurmurHash.hash64A
// does. The result is interpreted as a signed 64-bit integer, as in Java.
func MurmurHash64A(b []byte, seed uint32) int64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := uint64(seed) ^ (uint64(len(b)) * m)
	for len(b) >= 8 {
		k := binary.LittleEndian.Uint64(b)
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
		b = b[8:]
	}
	if len(b) > 0 {
		var tail uint64
		for i := len(b) - 1; i >= 0; i-- {
			tail = tail<<8 | uint64(b[i])
		}
		h ^= tail
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return int64(h)
}

// murmurString hashes a string without allocating.
func murmurString(s string) int64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := uint64(murmurSeed) ^ (uint64(len(s)) * m)
	for len(s) >= 8 {
		k := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
		s = s[8:]
	}
	if len(s) > 0 {
		var tail uint64
		for i := len(s) - 1; i >= 0; i-- {
			tail = tail<<8 | uint64(s[i])
		}
		h ^= tail
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return int64(h)
}

// Labels selects how the ring points of named shards are labelled.
type Labels int

const (
	// LabelsJedis3 labels the n-th point of a named shard "<name>*<n>", as
	// Jedis 2.10 and later (3.x) do. It is the zero value.
	LabelsJedis3 Labels = iota
	// LabelsJedis2 labels the n-th point of a named shard
	// "<name>*<weight><n>", as Jedis 2.9 and earlier do.
	LabelsJedis2
)

// Shard describes one shard of a [Murmur] ring.
type Shard struct {
	// Name is the shard's name. Empty means unnamed: the shard's points are
	// labelled "SHARD-<i>-NODE-<n>" where i is its position in the list,
	// so the ring depends on the list order.
	Name string
	// Weight multiplies the shard's 160 ring points. Zero or negative
	// means 1 (Jedis's default weight).
	Weight int
}

// MurmurOptions configures [NewMurmur].
type MurmurOptions struct {
	// Labels selects the label scheme for named shards. Default
	// LabelsJedis3. Unnamed shards are labelled the same in every scheme.
	Labels Labels
	// KeyTags, when true, hashes only the first key tag of a key, as Jedis
	// does with Sharded.DEFAULT_KEY_TAG_PATTERN \{(.+?)\}: the shortest
	// non-empty text between a '{' and the next '}' that contains no line
	// terminator. Keys without a tag are hashed whole. Default false.
	KeyTags bool
}

// Murmur is a Jedis-compatible consistent-hash ring. It is immutable and
// safe for concurrent use.
type Murmur struct {
	points  []int64 // ring points, sorted ascending (signed order)
	owners  []int32 // owners[i] is the shard index of points[i]
	keyTags bool
}

var _ Hash = (*Murmur)(nil)

// NewMurmur builds the ring for shards, in list order. When two shards
// produce the same ring point, the later shard owns it, as in Jedis's
// TreeMap. NewMurmur panics if shards is empty.
func NewMurmur(shards []Shard, opt MurmurOptions) *Murmur {
	if len(shards) == 0 {
		panic("consistent: NewMurmur with no shards")
	}
	owner := make(map[int64]int32)
	var label []byte
	for i, s := range shards {
		w := s.Weight
		if w <= 0 {
			w = 1
		}
		for n := 0; n < vnodesPerWeight*w; n++ {
			label = label[:0]
			switch {
			case s.Name == "":
				label = append(label, "SHARD-"...)
				label = strconv.AppendInt(label, int64(i), 10)
				label = append(label, "-NODE-"...)
			case opt.Labels == LabelsJedis2:
				label = append(label, s.Name...)
				label = append(label, '*')
				label = strconv.AppendInt(label, int64(w), 10)
			default:
				label = append(label, s.Name...)
				label = append(label, '*')
			}
			label = strconv.AppendInt(label, int64(n), 10)
			owner[MurmurHash64A(label, murmurSeed)] = int32(i)
		}
	}
	r := &Murmur{keyTags: opt.KeyTags, points: make([]int64, 0, len(owner))}
	for p := range owner {
		r.points = append(r.points, p)
	}
	slices.Sort(r.points)
	r.owners = make([]int32, len(r.points))
	for i, p := range r.points {
		r.owners[i] = owner[p]
	}
	return r
}

// Get returns the index, in the list given to [NewMurmur], of the shard
// that owns key: the owner of the first ring point >= the key's hash, or of
// the first point when the hash is above them all.
func (r *Murmur) Get(key string) int {
	if r.keyTags {
		key = JedisKeyTag(key)
	}
	h := murmurString(key)
	// Binary search for the first point >= h.
	lo, hi := 0, len(r.points)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if r.points[mid] < h {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(r.points) {
		lo = 0
	}
	return int(r.owners[lo])
}

// JedisKeyTag returns the part of key that Jedis hashes when key tags are
// enabled: the group of the first match of the Java regular expression
// \{(.+?)\}, or key itself when there is no match. As in Java, '.' matches
// any code point except the line terminators \n, \r, U+0085, U+2028 and
// U+2029.
func JedisKeyTag(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] != '{' {
			continue
		}
		// '.+?' must consume at least one code point before the '}'.
		j := i + 1
		if j >= len(key) {
			break
		}
		rn, size := utf8.DecodeRuneInString(key[j:])
		if isJavaLineTerminator(rn) {
			continue
		}
		for j += size; ; j += size {
			if j >= len(key) {
				// No '}' follows: no later '{' can match either.
				return key
			}
			if key[j] == '}' {
				return key[i+1 : j]
			}
			rn, size = utf8.DecodeRuneInString(key[j:])
			if isJavaLineTerminator(rn) {
				// Every '{' before j fails at this terminator too.
				i = j
				break
			}
		}
	}
	return key
}

func isJavaLineTerminator(r rune) bool {
	switch r {
	case '\n', '\r', 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}
