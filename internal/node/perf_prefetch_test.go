package node

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/resp"
	"github.com/shardis/shardis/internal/testutil"
)

// encodeCmd encodes one request as a RESP multibulk.
func encodeCmd(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, "\r\n"...)
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

// pipelineReplies writes req in one write and reads until the reply
// stream ends with until (or EOF when until is empty).
func pipelineReplies(t *testing.T, addr string, req []byte, until string) []byte {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(15 * time.Second))
	go func() { _, _ = nc.Write(req) }()
	var out []byte
	buf := make([]byte, 64*1024)
	for {
		n, err := nc.Read(buf)
		out = append(out, buf[:n]...)
		if until != "" && bytes.HasSuffix(out, []byte(until)) {
			return out
		}
		if err != nil {
			if until == "" && errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("%s: read after %d bytes: %v", addr, len(out), err)
		}
	}
}

// mixedPipeline builds a pipeline that mixes batchable commands (with keys)
// with commands that end a batch (SELECT, MULTI, CLIENT, unknown, wrong
// arity), so serve's parse-ahead and prefetch run over every boundary.
func mixedPipeline(rounds int) []byte {
	var b []byte
	b = encodeCmd(b, "FLUSHALL")
	for i := 0; i < rounds; i++ {
		k := "key:" + strconv.Itoa(i%97)
		b = encodeCmd(b, "SET", k, "v"+strconv.Itoa(i))
		b = encodeCmd(b, "GET", k)
		b = encodeCmd(b, "INCR", "ctr:"+strconv.Itoa(i%13))
		b = encodeCmd(b, "APPEND", k, "x")
		b = encodeCmd(b, "MGET", k, "ctr:1", "missing")
		switch i % 10 {
		case 0:
			b = encodeCmd(b, "SELECT", "1")
			b = encodeCmd(b, "GET", k)
			b = encodeCmd(b, "SET", k, "db1")
			b = encodeCmd(b, "SELECT", "0")
		case 1:
			b = encodeCmd(b, "MULTI")
			b = encodeCmd(b, "INCR", k) // queued; fails in EXEC (not an integer)
			b = encodeCmd(b, "SET", "m:"+k, "1")
			b = encodeCmd(b, "EXEC")
		case 2:
			b = encodeCmd(b, "NOSUCHCOMMAND", k)
			b = encodeCmd(b, "GET")
			b = encodeCmd(b, "GET", k, "extra")
		case 3:
			b = encodeCmd(b, "CLIENT", "REPLY", "SKIP")
			b = encodeCmd(b, "SET", k, "skipped-reply")
			b = encodeCmd(b, "GET", k)
		case 4:
			b = encodeCmd(b, "LPUSH", "list", k)
			b = encodeCmd(b, "GET", "list") // WRONGTYPE
			b = encodeCmd(b, "EXPIRE", k, "100")
			b = encodeCmd(b, "TTL", k)
			b = encodeCmd(b, "DEL", k, "m:"+k)
		}
	}
	b = encodeCmd(b, "DBSIZE")
	b = encodeCmd(b, "ECHO", "end-of-pipeline")
	return b
}

// TestPipelineBatchMatchesRedis sends one large pipeline in a single write
// to redis-server and to shardnode and compares the reply streams byte for
// byte: running parsed-ahead batches must not change any reply or order.
func TestPipelineBatchMatchesRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	bin := testutil.LookPath(t, "redis-server")
	raddr := startRedisServer(t, bin)
	ts := startServer(t)
	comparePipeline(t, raddr, ts.addr, mixedPipeline(400))

	// A protocol error after a batch: the batch's replies, then the
	// error, then the connection is closed, as redis-server does.
	bad := encodeCmd(nil, "SET", "a", "1")
	bad = encodeCmd(bad, "GET", "a")
	bad = encodeCmd(bad, "INCR", "n")
	bad = append(bad, "*1\r\n$x\r\n"...)
	want := pipelineReplies(t, raddr, bad, "")
	got := pipelineReplies(t, ts.addr, bad, "")
	if !bytes.Equal(got, want) {
		t.Fatalf("protocol error after a batch:\nredis:     %q\nshardnode: %q", want, got)
	}
}

// TestPipelineBatchDuringResize pipelines GETs of fixed keys while other
// clients grow and shrink the same shards (the lock-free prefetch reads
// bucket arrays being replaced): every reply must be the key's value.
func TestPipelineBatchDuringResize(t *testing.T) {
	ts := startServer(t)
	const fixed = 512
	var setup []byte
	for i := 0; i < fixed; i++ {
		setup = encodeCmd(setup, "SET", "fixed:"+strconv.Itoa(i), "val:"+strconv.Itoa(i))
	}
	setup = encodeCmd(setup, "ECHO", "ok")
	pipelineReplies(t, ts.addr, setup, "$2\r\nok\r\n")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := ts.client(t)
			defer c.Close()
			for round := 0; round < 20; round++ {
				select {
				case <-stop:
					return
				default:
				}
				p := c.Pipeline()
				for i := 0; i < 4000; i++ {
					p.Set(t.Context(), fmt.Sprintf("grow:%d:%d", w, i), "x", 0)
				}
				_, _ = p.Exec(t.Context())
				p = c.Pipeline()
				for i := 0; i < 4000; i++ {
					p.Del(t.Context(), fmt.Sprintf("grow:%d:%d", w, i))
				}
				_, _ = p.Exec(t.Context())
			}
		}(w)
	}
	defer func() { close(stop); wg.Wait() }()

	nc, err := net.DialTimeout("tcp", ts.addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	rd := bufio.NewReader(nc)
	deadline := time.Now().Add(2 * time.Second)
	for batch := 0; batch < 3000 && time.Now().Before(deadline); batch++ {
		var b []byte
		for i := 0; i < 16; i++ {
			b = encodeCmd(b, "GET", "fixed:"+strconv.Itoa((batch*16+i)%fixed))
		}
		_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Write(b); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 16; i++ {
			v, err := resp.ReadValue(rd)
			if err != nil {
				t.Fatal(err)
			}
			want := "val:" + strconv.Itoa((batch*16+i)%fixed)
			if string(v.Str) != want {
				t.Fatalf("batch %d GET %d: got %+v, want %q", batch, i, v, want)
			}
		}
	}
}

// collectionPipeline is a pipeline of runs of member commands on large
// hashes, sets and sorted sets (hashtable/skiplist encodings, whose
// members prefetchMembers touches), with the key's type changing, the key
// vanishing and ZADD options in the middle of runs.
func collectionPipeline(rounds int) []byte {
	var b []byte
	b = encodeCmd(b, "FLUSHALL")
	for i := 0; i < 300; i++ {
		m := "m:" + strconv.Itoa(i)
		b = encodeCmd(b, "HSET", "h", m, strconv.Itoa(i))
		b = encodeCmd(b, "SADD", "s", m)
		b = encodeCmd(b, "ZADD", "z", strconv.Itoa(i%17), m)
	}
	for i := 0; i < rounds; i++ {
		m := "m:" + strconv.Itoa((i*31)%400)
		n := "m:" + strconv.Itoa((i*7)%400)
		b = encodeCmd(b, "HSET", "h", m, "v"+strconv.Itoa(i), n, "w")
		b = encodeCmd(b, "HGET", "h", n)
		b = encodeCmd(b, "HINCRBY", "h", "ctr", "3")
		b = encodeCmd(b, "HMGET", "h", m, n, "nosuch")
		b = encodeCmd(b, "HDEL", "h", n)
		b = encodeCmd(b, "HEXISTS", "h", n)
		b = encodeCmd(b, "SADD", "s", m, n)
		b = encodeCmd(b, "SISMEMBER", "s", n)
		b = encodeCmd(b, "SREM", "s", m)
		b = encodeCmd(b, "SMISMEMBER", "s", m, n)
		b = encodeCmd(b, "ZADD", "z", strconv.Itoa(i%23), m)
		b = encodeCmd(b, "ZADD", "z", "GT", "CH", "5", n, "7", m)
		b = encodeCmd(b, "ZADD", "z", "INCR", "1.5", m)
		b = encodeCmd(b, "ZSCORE", "z", m)
		b = encodeCmd(b, "ZRANK", "z", n)
		b = encodeCmd(b, "ZINCRBY", "z", "2", n)
		b = encodeCmd(b, "ZREM", "z", n, "nosuch")
		b = encodeCmd(b, "ZMSCORE", "z", m, n)
		switch i % 25 {
		case 5:
			b = encodeCmd(b, "HSET", "s", m, "1") // WRONGTYPE
			b = encodeCmd(b, "SADD", "h", m)      // WRONGTYPE
			b = encodeCmd(b, "ZADD", "z", "NX", "XX", "1", m)
		case 10:
			b = encodeCmd(b, "RENAME", "h", "h2")
			b = encodeCmd(b, "HSET", "h", m, "new") // a small hash again
			b = encodeCmd(b, "HGET", "h2", m)
			b = encodeCmd(b, "DEL", "h")
			b = encodeCmd(b, "RENAME", "h2", "h")
		case 20:
			b = encodeCmd(b, "DEL", "s")
			b = encodeCmd(b, "SISMEMBER", "s", m)
			b = encodeCmd(b, "SADD", "s", m)
		}
	}
	b = encodeCmd(b, "HLEN", "h")
	b = encodeCmd(b, "SCARD", "s")
	b = encodeCmd(b, "ZRANGE", "z", "0", "-1", "WITHSCORES")
	b = encodeCmd(b, "ECHO", "end-of-pipeline")
	return b
}

// TestPipelineMembersMatchRedis is TestPipelineBatchMatchesRedis for the
// member prefetch of hashes, sets and sorted sets.
func TestPipelineMembersMatchRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	bin := testutil.LookPath(t, "redis-server")
	comparePipeline(t, startRedisServer(t, bin), startServer(t).addr, collectionPipeline(200))
}

// comparePipeline sends req, which ends with ECHO end-of-pipeline, in one
// write to redis-server (raddr) and to shardnode (addr) and fails at the
// first byte where the reply streams differ.
func comparePipeline(t *testing.T, raddr, addr string, req []byte) {
	t.Helper()
	const end = "$15\r\nend-of-pipeline\r\n"
	want := pipelineReplies(t, raddr, req, end)
	got := pipelineReplies(t, addr, req, end)
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		lo := max(0, i-80)
		t.Fatalf("replies differ at byte %d of %d/%d:\nredis:     %q\nshardnode: %q", i, len(want), len(got),
			want[lo:min(len(want), i+80)], got[lo:min(len(got), i+80)])
	}
}
