package persist

import (
	"crypto/sha1"
	"encoding/binary"
	"math"
	"strconv"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/stream"
	"github.com/shardis/shardis/internal/node/value"
)

// The dataset digest, computed as Redis's debug.c does so DEBUG DIGEST
// matches redis-server's for the same data: per key, SHA1 mixing of the
// key and its value (ordered for strings and lists, order-independent XOR
// for sets, hashes and sorted sets), XORed together; databases are mixed
// in by number.

// Digest is a SHA1-sized digest (DEBUG DIGEST, DEBUG DIGEST-VALUE).
type Digest [20]byte

// xor folds SHA1(p) into d.
func (d *Digest) xor(p []byte) {
	h := sha1.Sum(p)
	for i := range d {
		d[i] ^= h[i]
	}
}

// mix folds SHA1(p) into d, then replaces d by SHA1(d).
func (d *Digest) mix(p []byte) {
	d.xor(p)
	*d = sha1.Sum(d[:])
}

func digestScore(f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return []byte("inf")
	case math.IsInf(f, -1):
		return []byte("-inf")
	}
	return strconv.AppendFloat(nil, f, 'g', 17, 64)
}

// ValueDigest is DEBUG DIGEST-VALUE's digest of an entry: its value and
// whether it has an expiry (the key is not part of it).
func ValueDigest(e *keyspace.Entry) Digest {
	var d Digest
	valueDigest(&d, e)
	return d
}

// valueDigest folds a value (and its having an expiry) into d.
func valueDigest(d *Digest, e *keyspace.Entry) {
	var typ uint32
	switch o := e.Obj.(type) {
	case nil:
		d.mix(beUint32(typ))
		d.mix(e.Str)
	case *value.List:
		d.mix(beUint32(1))
		o.ForEach(func(v []byte) bool { d.mix(v); return true })
	case *value.Set:
		d.mix(beUint32(2))
		o.Each(func(m []byte) bool { d.xor(m); return true })
	case *value.ZSet:
		d.mix(beUint32(3))
		o.ForEach(func(m string, sc float64) bool {
			var ed Digest
			ed.mix([]byte(m))
			ed.mix(digestScore(sc))
			d.xor(ed[:])
			return true
		})
	case *stream.Stream:
		d.mix(beUint32(6))
		o.Range(stream.ID{}, stream.MaxID, false, func(id stream.ID, fv [][]byte) bool {
			d.mix([]byte(strconv.FormatUint(id.Ms, 10) + "." + strconv.FormatUint(id.Seq, 10)))
			for _, b := range fv {
				d.mix(b)
			}
			return true
		})
	case *value.Hash:
		d.mix(beUint32(4))
		o.Each(func(f, v []byte) bool {
			var ed Digest
			ed.mix(f)
			ed.mix(v)
			d.xor(ed[:])
			return true
		})
	}
	if e.Expire != 0 {
		d.xor([]byte("!!expire!!"))
	}
}

func beUint32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// DatasetDigest is DEBUG DIGEST's digest of the databases (every shard
// lock held): all zeros for an empty dataset.
func DatasetDigest(dbs []*keyspace.DB) Digest {
	var final Digest
	for i, db := range dbs {
		if db.Size() == 0 {
			continue
		}
		final.mix(beUint32(uint32(i)))
		for j := range db.Shards {
			db.Shards[j].ForEach(func(e *keyspace.Entry) bool {
				var d Digest
				d.mix([]byte(e.Key))
				valueDigest(&d, e)
				final.xor(d[:])
				return true
			})
		}
	}
	return final
}
