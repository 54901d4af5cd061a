package node

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/shardis/shardis/internal/node/persist"
)

// benchRDBServer returns a server holding n string keys shaped like
// scripts/bench-bgsave.sh's ("key:%012d" -> 64 '0' bytes).
func benchRDBServer(b *testing.B, n int) *Server {
	b.Helper()
	cfg := NewConfig()
	_ = cfg.Set("save", "")
	_ = cfg.Set("dir", b.TempDir())
	s, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	val := bytes.Repeat([]byte("0"), 64)
	s.LockAll()
	for i := 0; i < n; i++ {
		s.dbs[0].SetString(fmt.Sprintf("key:%012d", i), bytes.Clone(val), 0, false)
	}
	s.UnlockAll()
	return s
}

const benchRDBKeys = 200000

// BenchmarkRDBWrite is one snapshot of benchRDBKeys keys to io.Discard.
func BenchmarkRDBWrite(b *testing.B) {
	s := benchRDBServer(b, benchRDBKeys)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := s.WriteRDB(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchRDBKeys, "ns/key")
}

// BenchmarkRDBLoad loads a file of benchRDBKeys keys from memory.
func BenchmarkRDBLoad(b *testing.B) {
	s := benchRDBServer(b, benchRDBKeys)
	var buf bytes.Buffer
	if err := s.WriteRDB(&buf); err != nil {
		b.Fatal(err)
	}
	dst := benchRDBServer(b, 0)
	b.ReportAllocs()
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for range b.N {
		if err := dst.LoadRDB(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchRDBKeys, "ns/key")
}

// BenchmarkSnapshotCopy is the copy part of a snapshot (what a client
// pays when it touches a shard not copied yet), for benchRDBKeys keys.
func BenchmarkSnapshotCopy(b *testing.B) {
	s := benchRDBServer(b, benchRDBKeys)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s.LockAll()
		sn := s.persist.OpenLocked()
		sn.CopyAllLocked()
		s.UnlockAll()
		sn.ReleaseSides()
		sn.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchRDBKeys, "ns/key")
}

// BenchmarkSnapshotBucketTouch is what a write pays on a key whose
// bucket an open snapshot has not copied yet: one bucket's copy (its
// chain, about one key) per operation.
func BenchmarkSnapshotBucketTouch(b *testing.B) {
	s := benchRDBServer(b, benchRDBKeys)
	db := s.dbs[0]
	keys := make([]string, 0, 4096)
	for i := 0; len(keys) < cap(keys); i += 48 {
		keys = append(keys, fmt.Sprintf("key:%012d", i%benchRDBKeys))
	}
	b.ReportAllocs()
	b.ResetTimer()
	var sn *persist.Snapshot
	touched := 0
	for i := range b.N {
		if sn == nil || i%len(keys) == 0 {
			b.StopTimer()
			if sn != nil {
				sn.Close()
			}
			s.LockAll()
			sn = s.persist.OpenLocked()
			sn.Claim()
			s.UnlockAll()
			b.StartTimer()
		}
		k := keys[i%len(keys)]
		sh := db.KeyShard(k)
		sh.Mu.Lock()
		if sh.PendingSnapshots() != 0 && !sh.KeyCopied(k) {
			touched++
		}
		db.SnapTouchKey(k)
		sh.Mu.Unlock()
	}
	b.StopTimer()
	sn.Close()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(touched, 1)), "ns/bucket")
}
