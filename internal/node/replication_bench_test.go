package node

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/resp"
)

// benchKeys starts a node holding n keys key:%012d with 16-byte values,
// n from REPL_BENCH_KEYS or def.
func benchKeys(b *testing.B, def int) (*testServer, int) {
	n := def
	if v, err := strconv.Atoi(os.Getenv("REPL_BENCH_KEYS")); err == nil && v > 0 {
		n = v
	}
	ts := startServer(b)
	db := ts.srv.DB(0)
	ts.srv.LockAll()
	for i := 0; i < n; i++ {
		db.AddString([]byte(fmt.Sprintf("key:%012d", i)), []byte(fmt.Sprintf("val:%012d", i)), 0)
	}
	ts.srv.UnlockAll()
	return ts, n
}

// BenchmarkReplicationFullSync measures a full sync of REPL_BENCH_KEYS
// (default 200000) 16-byte keys/values between two in-process nodes: the
// time from REPLICAOF to master_link_status:up. Both sides run in this
// process, so -cpuprofile shows the master's RDB generation and the
// replica's receive and load together.
//
//	REPL_BENCH_KEYS=1000000 go test -run '^$' -bench ReplicationFullSync -benchtime 3x -cpuprofile /tmp/cpu.out ./internal/node
func BenchmarkReplicationFullSync(b *testing.B) {
	m, n := benchKeys(b, 200000)
	host, port := hostPort(m.addr)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := startServer(b)
		rc := s.client(b)
		b.StartTimer()
		start := time.Now()
		if err := rc.Do(ctx(b), "REPLICAOF", host, port).Err(); err != nil {
			b.Fatal(err)
		}
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatal("link not up after a minute")
			}
			if s.srv.repl.linkUp() {
				break
			}
		}
		b.ReportMetric(time.Since(start).Seconds(), "sync-s")
		b.StopTimer()
		if got := s.srv.DB(0).Size(); got != int64(n) {
			b.Fatalf("replica has %d keys, want %d", got, n)
		}
		_ = rc.Do(ctx(b), "REPLICAOF", "NO", "ONE").Err()
		b.StartTimer()
	}
}

// linkUp reports whether this node is a replica with its link connected.
func (r *replication) linkUp() bool {
	r.mu.Lock()
	l := r.link
	r.mu.Unlock()
	return l != nil && l.status().state == linkConnected
}

// BenchmarkStagingLoad measures a replica's load of a full-sync payload
// into staging databases (REPL_BENCH_KEYS keys, default 200000).
func BenchmarkStagingLoad(b *testing.B) {
	m, n := benchKeys(b, 200000)
	var buf bytes.Buffer
	if err := m.srv.WriteRDB(&buf); err != nil {
		b.Fatal(err)
	}
	for _, presize := range []bool{false, true} {
		b.Run(fmt.Sprintf("presize=%v", presize), func(b *testing.B) {
			for b.Loop() {
				staging := make([]*keyspace.DB, m.srv.NumDBs())
				for i := range staging {
					staging[i] = keyspace.NewDB(m.srv.ks, i)
					staging[i].Staged = true
				}
				if err := m.srv.persist.LoadInto(bytes.NewReader(buf.Bytes()), staging, presize); err != nil {
					b.Fatal(err)
				}
				if got := staging[0].Size(); got != int64(n) {
					b.Fatalf("%d keys", got)
				}
			}
		})
	}
}

// BenchmarkReplicaApply measures how fast a replica applies its master's
// stream: a fake master sends an RDB of REPL_BENCH_KEYS keys (default
// 1000000) and then, per iteration, 100000 SETs of random existing keys
// with 3-byte values (redis-benchmark's SET load), as fast as the socket
// takes them; the time is until slave_repl_offset reaches the end. ns/op
// is per applied SET, on one goroutine, so it is the apply path's cost
// (parse, key lookup, write, forward to the backlog).
func BenchmarkReplicaApply(b *testing.B) {
	src, n := benchKeys(b, 1000000)
	var rdb bytes.Buffer
	if err := src.srv.WriteRDB(&rdb); err != nil {
		b.Fatal(err)
	}
	const per = 100000
	rng := rand.New(rand.NewPCG(1, 2))
	var stream []byte
	for i := 0; i < per; i++ {
		stream = resp.AppendCommandStrings(stream, "SET", fmt.Sprintf("key:%012d", rng.IntN(n)), "xxx")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	conns := make(chan net.Conn, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		fakeHandshake(nc, func() bool {
			var p []byte
			p = append(p, "+FULLRESYNC "+strings.Repeat("a", 40)+" 0\r\n"...)
			p = append(p, "$"+strconv.Itoa(rdb.Len())+"\r\n"...)
			p = append(p, rdb.Bytes()...)
			p = resp.AppendCommandStrings(p, "SELECT", "0")
			nc.Write(p)
			conns <- nc
			return false
		})
	}()
	replica := startServer(b)
	rc := replica.client(b)
	h, p := hostPort(ln.Addr().String())
	if err := rc.Do(ctx(b), "REPLICAOF", h, p).Err(); err != nil {
		b.Fatal(err)
	}
	nc := <-conns
	r := replica.srv.repl
	offset := r.Offset
	for deadline := time.Now().Add(time.Minute); !r.linkUp() || offset() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("link not up after a minute")
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		want := offset() + int64(len(stream))
		go nc.Write(stream)
		for deadline := time.Now().Add(time.Minute); offset() < want; time.Sleep(100 * time.Microsecond) {
			if time.Now().After(deadline) {
				b.Fatal("stream not applied after a minute")
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*per), "ns/set")
}
