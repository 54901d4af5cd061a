// Package keyopts holds the argument grammars and the pure rules of the
// generic key commands (Redis's db.c, expire.c and the RESTORE half of
// cluster.c): EXPIRE's NX/XX/GT/LT and its times, TTL's arithmetic,
// SCAN's options and cursor, COPY's and RESTORE's options. It knows no
// client, no server and no keyspace; errors carry Redis's reply text.
package keyopts

import (
	"errors"
	"math"
	"strings"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/strops"
	"github.com/shardis/shardis/internal/node/value"
)

// Errors of the key commands, in Redis's words.
var (
	// ErrSyntax is Redis's generic syntax error.
	ErrSyntax = strops.ErrSyntax
	// ErrNotInt refuses an argument that is not an integer.
	ErrNotInt = strops.ErrNotInt
	// ErrNXAndOthers refuses NX with XX, GT or LT.
	ErrNXAndOthers = errors.New("ERR NX and XX, GT or LT options at the same time are not compatible")
	// ErrGTAndLT refuses GT with LT.
	ErrGTAndLT = errors.New("ERR GT and LT options at the same time are not compatible")
	// ErrCursor refuses a SCAN cursor that is not an unsigned integer.
	ErrCursor = errors.New("ERR invalid cursor")
	// ErrIdleTime refuses RESTORE's negative IDLETIME.
	ErrIdleTime = errors.New("ERR Invalid IDLETIME value, must be >= 0")
	// ErrFreq refuses RESTORE's FREQ out of 0..255.
	ErrFreq = errors.New("ERR Invalid FREQ value, must be >= 0 and <= 255")
	// ErrTTL refuses RESTORE's negative ttl.
	ErrTTL = errors.New("ERR Invalid TTL value, must be >= 0")
)

func eqFold(a []byte, s string) bool { return strings.EqualFold(string(a), s) }

// Flags of the EXPIRE family: NX, XX, GT and LT.
const (
	ExpireNX = 1 << iota
	ExpireXX
	ExpireGT
	ExpireLT
)

// ParseExpireFlags parses EXPIRE's NX|XX|GT|LT.
func ParseExpireFlags(opts [][]byte) (int, error) {
	flags := 0
	for _, o := range opts {
		switch {
		case eqFold(o, "NX"):
			flags |= ExpireNX
		case eqFold(o, "XX"):
			flags |= ExpireXX
		case eqFold(o, "GT"):
			flags |= ExpireGT
		case eqFold(o, "LT"):
			flags |= ExpireLT
		default:
			return 0, errors.New("ERR Unsupported option " + string(o))
		}
	}
	if flags&ExpireNX != 0 && flags&(ExpireXX|ExpireGT|ExpireLT) != 0 {
		return 0, ErrNXAndOthers
	}
	if flags&ExpireGT != 0 && flags&ExpireLT != 0 {
		return 0, ErrGTAndLT
	}
	return flags, nil
}

// ExpireTime is the absolute time in ms of EXPIRE's argument: basetime is
// 0 for the *AT variants and now for the relative ones; seconds for
// EXPIRE and EXPIREAT. name is the command, for the error.
func ExpireTime(arg []byte, basetime int64, seconds bool, name string) (int64, error) {
	when, ok := value.ParseInt(arg)
	if !ok {
		return 0, ErrNotInt
	}
	if seconds {
		if when > (1<<63-1)/1000 || when < (-1<<63)/1000 {
			return 0, strops.InvalidExpire(name)
		}
		when *= 1000
	}
	if when > 1<<63-1-basetime {
		return 0, strops.InvalidExpire(name)
	}
	return when + basetime, nil
}

// ExpireSkipped reports whether flags keep EXPIRE from setting when on a
// key whose expire time is cur (0: none, Redis's -1).
func ExpireSkipped(flags int, cur, when int64) bool {
	return flags&ExpireNX != 0 && cur != 0 ||
		flags&ExpireXX != 0 && cur == 0 ||
		flags&ExpireGT != 0 && (cur == 0 || when <= cur) ||
		flags&ExpireLT != 0 && cur != 0 && when >= cur
}

// TTL is what TTL (ms false, abs false), PTTL, EXPIRETIME (abs) and
// PEXPIRETIME reply for a key expiring at expire (0: never, -1) at now.
func TTL(expire, now int64, ms, abs bool) int64 {
	if expire == 0 {
		return -1
	}
	ttl := expire
	if !abs {
		ttl -= now
	}
	ttl = max(ttl, 0)
	if !ms {
		// Unsigned, as redis-server 7.0 computes it: an expire near
		// 2^63 ms rounds to 9223372036854776, not a wrapped negative.
		ttl = int64((uint64(ttl) + 500) / 1000)
	}
	return ttl
}

// ScanOptions are SCAN's MATCH, COUNT and TYPE.
type ScanOptions struct {
	// Count is COUNT (10 without it).
	Count int64
	// Pattern is MATCH's pattern when Match (a pattern of "*" matches all
	// and sets no Match).
	Pattern string
	Match   bool
	// Type is TYPE's type name when HasType.
	Type    string
	HasType bool
}

// ParseScan parses SCAN's options (after the cursor).
func ParseScan(opts [][]byte) (ScanOptions, error) {
	o := ScanOptions{Count: 10}
	for i := 0; i < len(opts); i += 2 {
		more := i+1 < len(opts)
		switch a := opts[i]; {
		case eqFold(a, "COUNT") && more:
			n, ok := value.ParseInt(opts[i+1])
			if !ok {
				return o, ErrNotInt
			}
			if n < 1 {
				return o, ErrSyntax
			}
			o.Count = n
		case eqFold(a, "MATCH") && more:
			o.Pattern = string(opts[i+1])
			o.Match = o.Pattern != "*"
		case eqFold(a, "TYPE") && more:
			o.Type = string(opts[i+1])
			o.HasType = true
		default:
			return o, ErrSyntax
		}
	}
	return o, nil
}

// TypeMatches reports whether a key of type typ passes TYPE.
func (o *ScanOptions) TypeMatches(typ string) bool {
	return !o.HasType || strings.EqualFold(o.Type, typ)
}

// CopyOptions are COPY's options.
type CopyOptions struct {
	// Replace: REPLACE.
	Replace bool
	// DB is DB's database, -1 without it.
	DB int
}

// ParseCopy parses COPY's options (after the two keys) for a server of
// numDBs databases, refusing a bad DB index where it appears, as Redis
// does.
func ParseCopy(opts [][]byte, numDBs int) (CopyOptions, error) {
	o := CopyOptions{DB: -1}
	for j := 0; j < len(opts); j++ {
		switch a := opts[j]; {
		case eqFold(a, "REPLACE"):
			o.Replace = true
		case eqFold(a, "DB") && j+1 < len(opts):
			id, err := ParseDBIndex(opts[j+1], numDBs)
			if err != nil {
				return o, err
			}
			o.DB = id
			j++
		default:
			return o, ErrSyntax
		}
	}
	return o, nil
}

// Errors of a database index.
var (
	// ErrDBRange refuses an index beyond int32.
	ErrDBRange = errors.New("ERR value is out of range, value must between -2147483648 and 2147483647")
	// ErrDBIndex refuses an index of no database.
	ErrDBIndex = errors.New("ERR DB index is out of range")
)

// ParseDBIndex parses a database index for a server of numDBs databases.
func ParseDBIndex(arg []byte, numDBs int) (int, error) {
	n, ok := value.ParseInt(arg)
	switch {
	case !ok:
		return 0, ErrNotInt
	case n < math.MinInt32 || n > math.MaxInt32:
		return 0, ErrDBRange
	case n < 0 || n >= int64(numDBs):
		return 0, ErrDBIndex
	}
	return int(n), nil
}

// RestoreOptions are RESTORE's options.
type RestoreOptions struct {
	// Replace, AbsTTL: REPLACE and ABSTTL.
	Replace, AbsTTL bool
	// Idle is IDLETIME's seconds, Freq FREQ's counter; -1 when absent.
	Idle, Freq int64
}

// ParseRestore parses RESTORE's options (after key, ttl and payload).
func ParseRestore(opts [][]byte) (RestoreOptions, error) {
	o := RestoreOptions{Idle: -1, Freq: -1}
	for j := 0; j < len(opts); j++ {
		more := len(opts) - j - 1
		switch {
		case eqFold(opts[j], "replace"):
			o.Replace = true
		case eqFold(opts[j], "absttl"):
			o.AbsTTL = true
		case eqFold(opts[j], "idletime") && more >= 1 && o.Freq == -1:
			j++
			v, ok := value.ParseInt(opts[j])
			if !ok {
				return o, ErrNotInt
			}
			if v < 0 {
				return o, ErrIdleTime
			}
			o.Idle = v
		case eqFold(opts[j], "freq") && more >= 1 && o.Idle == -1:
			j++
			v, ok := value.ParseInt(opts[j])
			if !ok {
				return o, ErrNotInt
			}
			if v < 0 || v > 255 {
				return o, ErrFreq
			}
			o.Freq = v
		default:
			return o, ErrSyntax
		}
	}
	return o, nil
}

// ParseRestoreTTL parses RESTORE's ttl argument.
func ParseRestoreTTL(arg []byte) (int64, error) {
	ttl, ok := value.ParseInt(arg)
	if !ok {
		return 0, ErrNotInt
	}
	if ttl < 0 {
		return 0, ErrTTL
	}
	return ttl, nil
}

// Errors of OBJECT FREQ and OBJECT IDLETIME under the other policy kind.
var (
	// ErrNotLFU refuses OBJECT FREQ without an LFU policy.
	ErrNotLFU = errors.New("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
	// ErrLFU refuses OBJECT IDLETIME under an LFU policy.
	ErrLFU = errors.New("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
)

// IdleTime is OBJECT IDLETIME's seconds for a key last used at LRU clock
// lru when the clock reads now.
func IdleTime(lru, now uint32) int64 {
	if lru != 0 && now > lru {
		return int64(now - lru)
	}
	return 0
}

// Refcount is OBJECT REFCOUNT for a string value s: Redis shares the
// objects of the integers 0..9999 (INT_MAX references), any other value
// has one.
func Refcount(s []byte) int64 {
	if len(s) <= 4 {
		if n, ok := value.ParseInt(s); ok && n >= 0 && n < 10000 {
			return 1<<31 - 1
		}
	}
	return 1
}

// ObjectHelp is OBJECT HELP's text after its first line.
var ObjectHelp = []string{
	"ENCODING <key>",
	"    Return the kind of internal representation used in order to store the value",
	"    associated with a <key>.",
	"FREQ <key>",
	"    Return the access frequency index of the <key>. The returned integer is",
	"    proportional to the logarithm of the recent access frequency of the key.",
	"IDLETIME <key>",
	"    Return the idle time of the <key>, that is the approximated number of",
	"    seconds elapsed since the last access to the key.",
	"REFCOUNT <key>",
	"    Return the number of references of the value associated with the specified",
	"    <key>.",
}

// lfuInitVal is the access counter of a new key under an LFU policy
// (Redis's LFU_INIT_VAL).
const lfuInitVal = 5

// LRU is the LRU field of a restored key: under an LFU policy the access
// counter (FREQ, or LFU_INIT_VAL), else the LRU clock minus IDLETIME.
func (o *RestoreOptions) LRU(lfu bool, clock uint32) uint32 {
	switch {
	case lfu && o.Freq >= 0:
		return uint32(o.Freq)
	case lfu:
		return lfuInitVal
	case o.Idle >= 0:
		return clock - uint32(o.Idle)
	}
	return clock
}

// ExpireAt is the absolute expire time (0: none) of a key restored with
// ttl at now (ttl is absolute already with ABSTTL); expired reports a
// time already past, which restores nothing.
func (o *RestoreOptions) ExpireAt(ttl, now int64) (at int64, expired bool) {
	if ttl > 0 && !o.AbsTTL {
		ttl += now
	}
	return ttl, ttl > 0 && ttl <= now
}

// ScanWalk runs the walk of one SCAN call from cursor over the keyspace's
// keyspace.NumShards shards. The cursor holds a shard's bucket cursor
// shifted left by keyspace.ShardBits and the shard index in the low bits;
// shards are walked in order, each with its own reverse-binary bucket
// cursor, so a key present for the whole scan is returned at least once
// even if shards grow or shrink between calls. begin(shard) starts the
// steps on a shard (it locks it) and returns what ends them; step runs one
// bucket step and returns the next bucket (0 at the shard's end) and the
// number of keys kept so far. The walk stops once count keys are kept or
// after 10*count steps, as Redis bounds a SCAN's work; it returns the next
// cursor (0 when the walk is complete).
func ScanWalk(cursor uint64, count int64, begin func(shard int) (end func()), step func(shard int, bucket uint64) (next uint64, kept int)) uint64 {
	shard := int(cursor & (keyspace.NumShards - 1))
	bucket := cursor >> keyspace.ShardBits
	maxIter := count * 10
	kept := 0
	for shard < keyspace.NumShards {
		end := begin(shard)
		for {
			bucket, kept = step(shard, bucket)
			maxIter--
			if bucket == 0 || maxIter <= 0 || int64(kept) >= count {
				break
			}
		}
		end()
		if bucket == 0 {
			shard++
		}
		if maxIter <= 0 || int64(kept) >= count {
			break
		}
	}
	if shard < keyspace.NumShards {
		return bucket<<keyspace.ShardBits | uint64(shard)
	}
	return 0
}

// CopyEntry is COPY's copy of e: its value cloned (a string as a new
// non-nil slice) and its expire time; the LRU clock starts afresh.
func CopyEntry(e *keyspace.Entry) *keyspace.Entry {
	ne := &keyspace.Entry{Expire: e.Expire}
	switch v := e.Obj.(type) {
	case nil:
		ne.Str = append([]byte{}, e.Str...)
	case value.Value:
		ne.Obj = v.Clone()
	default:
		ne.Obj = e.Obj
	}
	return ne
}
