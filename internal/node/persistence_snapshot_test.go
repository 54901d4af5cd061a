package node

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/value"
	"github.com/shardis/shardis/internal/rdb"
)

// snapCanonEntry renders an entry canonically ("type value expire"),
// comparable with snapCanonRDB's rendering of the same key in a file.
func snapCanonEntry(e *keyspace.Entry) string {
	var typ string
	var l []string
	switch o := e.Obj.(type) {
	case nil:
		typ, l = "string", []string{string(e.Str)}
	case *value.List:
		typ = "list"
		o.ForEach(func(v []byte) bool { l = append(l, string(v)); return true })
	case *value.Set:
		typ = "set"
		o.ForEach(func(m string) bool { l = append(l, m); return true })
		sort.Strings(l)
	case *value.Hash:
		typ = "hash"
		o.ForEach(func(f string, v []byte) bool { l = append(l, f+"="+string(v)); return true })
		sort.Strings(l)
	case *value.ZSet:
		typ = "zset"
		o.ForEach(func(m string, sc float64) bool { l = append(l, m+"="+fmtScore(sc)); return true })
		sort.Strings(l)
	}
	return fmt.Sprintf("%s %q %d", typ, strings.Join(l, "\x00"), e.Expire)
}

// snapCanonLocked reads every database, expired keys included, without
// changing any shard (no finishRehash: a growth in progress must still be
// in progress when the snapshot opens). Every shard lock must be held.
func snapCanonLocked(s *Server) map[string]string {
	out := map[string]string{}
	for i, db := range s.dbs {
		for j := range db.Shards {
			sh := &db.Shards[j]
			sh.Walk(func(e *keyspace.Entry) {
				out[fmt.Sprintf("%d:%s", i, e.Key)] = snapCanonEntry(e)
			})
		}
	}
	return out
}

// snapCanonRDB reads a file's keys (expired ones included) as
// snapCanonLocked renders them.
func snapCanonRDB(t *testing.T, data []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	_, err := rdb.Parse(bytes.NewReader(data), rdb.Handler{Key: func(en *rdb.Entry) error {
		v := en.Value
		var typ string
		var l []string
		switch v.Kind {
		case rdb.KindString:
			typ, l = "string", []string{string(v.Str)}
		case rdb.KindList:
			typ = "list"
			for _, el := range v.Elems {
				l = append(l, string(el))
			}
		case rdb.KindSet:
			typ = "set"
			for _, el := range v.Elems {
				l = append(l, string(el))
			}
			sort.Strings(l)
		case rdb.KindHash:
			typ = "hash"
			for _, f := range v.Hash {
				l = append(l, string(f.Field)+"="+string(f.Value))
			}
			sort.Strings(l)
		case rdb.KindZSet:
			typ = "zset"
			for _, m := range v.ZSet {
				l = append(l, string(m.Member)+"="+fmtScore(m.Score))
			}
			sort.Strings(l)
		}
		k := fmt.Sprintf("%d:%s", en.DB, en.Key)
		if _, dup := out[k]; dup {
			return fmt.Errorf("key %s twice in the file", k)
		}
		out[k] = fmt.Sprintf("%s %q %d", typ, strings.Join(l, "\x00"), en.ExpireMs)
		return nil
	}})
	if err != nil {
		t.Fatalf("parsing the snapshot: %v", err)
	}
	return out
}

// TestSnapshotChunksPointInTime is a randomized model test of
// copy-on-write snapshots: two snapshots are opened at one instant over a
// dataset of every type in four databases (small shards of one writer
// chunk, large shards of many, a shard in the middle of a growth, keys
// about to expire), then clients write at random (in-place changes, inserts that
// would grow a shard, deletes, expiries, renames, MULTI/EXEC, other
// databases, FLUSHDB, late SWAPDB and MOVE) while the slowed writers advance. Both files must hold
// exactly the dataset of the opening instant. A bucket a change reaches
// before its copy shows up as a difference: the test fails without the
// per-key guard of write commands, without the copy in shard.remove
// (expiries), without the copy in shard.insert (keys the server adds
// itself, outside a command's guard, simulated by a goroutine) or with a
// pending shard allowed to grow or shrink.
func TestSnapshotChunksPointInTime(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	ts := startServer(t, "rdb-key-save-delay", "-2")
	s := ts.srv
	// Tags in distinct shards.
	used := map[int]bool{}
	tag := func(name string) string {
		for i := 0; ; i++ {
			tg := fmt.Sprintf("{%s%d}", name, i)
			if !used[keyspace.ShardOf(tg)] {
				used[keyspace.ShardOf(tg)] = true
				return tg
			}
		}
	}
	big, grow, edge, shrink := tag("big"), tag("grow"), tag("edge"), tag("shrink")

	// The dataset. Tagged keys share a shard: {big} has 6000 keys (8192
	// buckets, 32 chunks), {grow} stops in the middle of a growth (copied
	// whole), {edge} and {shrink} below; other shards have a few hundred
	// keys (one chunk).
	s.LockAll()
	now := time.Now().UnixMilli()
	put := func(db int, key string) {
		d := s.dbs[db]
		switch rng.IntN(8) {
		case 0:
			l := value.NewList()
			for i := range 1 + rng.IntN(20) {
				l.PushBack([]byte("e" + strconv.Itoa(i)))
			}
			d.SetObject(key, l)
		case 1:
			h := value.NewHash()
			for i := range 1 + rng.IntN(20) {
				h.SetB([]byte("f"+strconv.Itoa(i)), []byte("v"), s.hashLimits())
			}
			d.SetObject(key, h)
		case 2:
			st := value.NewSet()
			for i := range 1 + rng.IntN(20) {
				st.AddB([]byte(strconv.Itoa(i*3)), s.intsetLimit())
			}
			d.SetObject(key, st)
		case 3:
			z := value.NewZSet()
			for i := range 1 + rng.IntN(20) {
				z.Add("m"+strconv.Itoa(i), float64(i))
			}
			d.SetObject(key, z)
		default:
			d.SetString(key, []byte("v0-"+key), 0, false)
		}
		if sh := keyspace.ShardOf(key); sh == keyspace.ShardOf(edge) || sh == keyspace.ShardOf(shrink) {
			return // their key counts must not change before the opening
		}
		if e := d.GetEntry(key); rng.IntN(10) == 0 {
			// Expiring soon: active expiry deletes these while the save
			// runs (the file must still hold them).
			d.SetExpire(e, now+100+rng.Int64N(1500))
		} else if rng.IntN(10) == 0 {
			d.SetExpire(e, now+3600_000)
		}
	}
	for i := range 15000 {
		put(0, "k"+strconv.Itoa(i))
	}
	for i := range 6000 {
		put(0, big+strconv.Itoa(i))
	}
	growSh := s.dbs[0].KeyShard(grow)
	for i := 0; !growSh.Growing() || growSh.Len() < 1040; i++ {
		put(0, grow+strconv.Itoa(i))
	}
	for db := 1; db < 4; db++ {
		for i := range 3000 {
			put(db, "k"+strconv.Itoa(i))
		}
	}
	// {edge} is full (its next insert would grow it), {shrink} is one
	// delete away from shrinking: both must wait while pending.
	edgeSh := s.dbs[0].KeyShard(edge)
	for i := 0; edgeSh.Len() < 1024 && i < 2000; i++ {
		put(0, edge+strconv.Itoa(i))
	}
	shrinkSh := s.dbs[0].KeyShard(shrink)
	for i := range 1000 {
		put(0, shrink+strconv.Itoa(i))
	}
	for i := 0; shrinkSh.Len() > shrinkSh.NumBuckets()/8 && i < 1000; i++ {
		s.dbs[0].Remove(shrink + strconv.Itoa(i))
	}
	shrinkSh.FinishRehash()
	if !growSh.Growing() || edgeSh.Growing() || edgeSh.Len() != edgeSh.NumBuckets() || shrinkSh.Len() != shrinkSh.NumBuckets()/8 {
		s.UnlockAll()
		t.Fatalf("shards not as planned: {grow} growing %v, {edge} %d keys in %d buckets, {shrink} %d in %d",
			growSh.Growing(), edgeSh.Len(), edgeSh.NumBuckets(), shrinkSh.Len(), shrinkSh.NumBuckets())
	}
	want := snapCanonLocked(s)
	p := s.persist
	sn1 := p.OpenLocked()
	sn1.Background = true
	sn2 := p.OpenLocked()
	s.UnlockAll()

	// First touches: a delete that would shrink {shrink} and an insert
	// that would grow {edge}, while nearly all their chunks are pending.
	pre := ts.client(t)
	if err := pre.Del(context.Background(), shrink+"999").Err(); err != nil {
		t.Fatal(err)
	}
	if err := pre.Set(context.Background(), edge+"new", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.LockAll()
	past := shrinkSh.Len() < shrinkSh.NumBuckets()/8 && edgeSh.Len() > edgeSh.NumBuckets()
	s.UnlockAll()
	if !past {
		t.Fatalf("{shrink} %d keys in %d buckets, {edge} %d in %d: not past their limits", shrinkSh.Len(), shrinkSh.NumBuckets(), edgeSh.Len(), edgeSh.NumBuckets())
	}

	// Clients write at random while the writers run.
	var stop atomic.Bool
	var ops atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			rc := redis.NewClient(&redis.Options{Addr: ts.addr, DisableIdentity: true, MaxRetries: -1, PoolSize: 1})
			defer rc.Close()
			c := context.Background()
			key := func() string {
				switch r.IntN(10) {
				case 0:
					return big + strconv.Itoa(r.IntN(6500))
				case 1:
					return grow + strconv.Itoa(r.IntN(1100))
				case 2:
					return edge + strconv.Itoa(r.IntN(1100))
				case 3:
					return shrink + strconv.Itoa(r.IntN(1000))
				}
				return "k" + strconv.Itoa(r.IntN(16000))
			}
			for n := 0; n < 200000 && !stop.Load(); n++ {
				if err := snapRandomOp(c, rc, r, key, w, n); err != nil {
					errc <- err
					return
				}
				ops.Add(1)
			}
		}()
	}
	// Inserts from inside the server (as active expiry, eviction or a
	// load would make them, outside any command's key guard): new keys,
	// added under the shard lock while their buckets may be pending. Only
	// shard.insert's own copy keeps them out of the files.
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(seed, 99))
		for n := 0; n < 50000 && !stop.Load(); n++ {
			var k string
			switch r.IntN(4) {
			case 0:
				k = big + "ins" + strconv.Itoa(n)
			case 1:
				k = shrink + "ins" + strconv.Itoa(n)
			default:
				k = "ins" + strconv.Itoa(n)
			}
			db := s.dbs[r.IntN(2)]
			sh := db.KeyShard(k)
			sh.Mu.Lock()
			db.SetString(k, []byte("inserted"), 0, false)
			sh.Mu.Unlock()
			if n%64 == 0 {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	var buf1, buf2 bytes.Buffer
	var err1, err2 error
	var wwg sync.WaitGroup
	wwg.Add(2)
	time.Sleep(20 * time.Millisecond) // let the clients start first
	go func() { defer wwg.Done(); err1 = sn1.Encode(&buf1) }()
	go func() { defer wwg.Done(); err2 = sn2.Encode(&buf2) }()
	wwg.Wait()
	writtenOps := ops.Load()
	stop.Store(true)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatalf("client: %v", err)
	default:
	}
	if err1 != nil || err2 != nil {
		t.Fatalf("writers: %v, %v", err1, err2)
	}
	t.Logf("%d keys, %d client operations during the save", len(want), writtenOps)
	if writtenOps < 2000 {
		t.Fatalf("only %d client operations ran during the save", writtenOps)
	}
	for name, data := range map[string][]byte{"first": buf1.Bytes(), "second": buf2.Bytes()} {
		got := snapCanonRDB(t, data)
		bad := 0
		for k, w := range want {
			if g, ok := got[k]; !ok {
				t.Errorf("%s snapshot: key %s missing", name, k)
			} else if g != w {
				t.Errorf("%s snapshot: key %s: got %.100s, want %.100s", name, k, g, w)
			} else {
				continue
			}
			if bad++; bad > 10 {
				t.Fatalf("%s snapshot: too many differences", name)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("%s snapshot: key %s was not there at the opening", name, k)
				if bad++; bad > 10 {
					t.Fatalf("%s snapshot: too many differences", name)
				}
			}
		}
	}
	// Every shard is unfrozen again, and {fill} grew once it was full.
	s.LockAll()
	defer s.UnlockAll()
	for i, db := range s.dbs {
		for j := range db.Shards {
			if n := db.Shards[j].PendingSnapshots(); n != 0 {
				t.Errorf("db %d shard %d still lists %d snapshots", i, j, n)
			}
		}
	}
}

// snapRandomOp runs one random write (or a read that may expire a key)
// for TestSnapshotChunksPointInTime.
func snapRandomOp(c context.Context, rc *redis.Client, r *rand.Rand, key func() string, w, n int) error {
	k := key()
	val := fmt.Sprintf("w%d-%d", w, n)
	var err error
	switch op := r.IntN(22); op {
	case 0, 1:
		err = rc.Set(c, k, val, 0).Err()
	case 2:
		err = rc.Del(c, k).Err()
	case 3:
		err = rc.Append(c, k, "x").Err()
	case 4:
		err = rc.SetRange(c, k, 1, "Z").Err()
	case 5:
		err = rc.RPush(c, k, val).Err()
	case 6:
		err = rc.LPop(c, k).Err()
	case 7:
		err = rc.HSet(c, k, "f"+strconv.Itoa(r.IntN(30)), val).Err()
	case 8:
		err = rc.SAdd(c, k, strconv.Itoa(r.IntN(90))).Err()
	case 9:
		err = rc.ZAdd(c, k, redis.Z{Score: float64(r.IntN(100)), Member: "m" + strconv.Itoa(r.IntN(30))}).Err()
	case 10:
		err = rc.PExpire(c, k, time.Duration(1+r.IntN(300))*time.Millisecond).Err()
	case 11:
		err = rc.Persist(c, k).Err()
	case 12:
		err = rc.Rename(c, k, key()).Err()
	case 13:
		err = rc.MSet(c, k, val, key(), val, key(), val).Err()
	case 14:
		err = rc.Del(c, k, key(), key()).Err()
	case 15:
		_, err = rc.TxPipelined(c, func(p redis.Pipeliner) error {
			p.Set(c, k, val, 0)
			p.Incr(c, "counter"+strconv.Itoa(r.IntN(50)))
			p.Del(c, key())
			return nil
		})
	case 16:
		err = rc.GetDel(c, k).Err()
	case 17, 18:
		err = rc.Get(c, k).Err() // may delete an expired key
	case 19:
		// SWAPDB and MOVE lock every shard, which completes every copy:
		// rare, and only once the others had time to hit pending chunks.
		switch {
		case n > 3000 && r.IntN(3000) == 0:
			err = rc.Do(c, "SWAPDB", 2, 3).Err()
		case n > 3000 && r.IntN(3000) == 0:
			err = rc.Do(c, "MOVE", k, 1).Err()
		default:
			err = rc.HDel(c, k, "f"+strconv.Itoa(r.IntN(30))).Err()
		}
	case 20:
		if r.IntN(300) == 0 {
			_, err = rc.Pipelined(c, func(p redis.Pipeliner) error {
				p.Select(c, 3)
				p.FlushDB(c)
				p.Select(c, 0)
				return nil
			})
		} else {
			err = rc.Incr(c, "counter"+strconv.Itoa(r.IntN(50))).Err()
		}
	case 21:
		_, err = rc.Pipelined(c, func(p redis.Pipeliner) error {
			p.Select(c, 1+r.IntN(3))
			p.Set(c, "k"+strconv.Itoa(r.IntN(3500)), val, 0)
			p.HSet(c, "k"+strconv.Itoa(r.IntN(3500)), "f", val)
			p.Select(c, 0)
			return nil
		})
	}
	if err != nil && err != redis.Nil && !strings.HasPrefix(err.Error(), "WRONGTYPE") && !strings.HasPrefix(err.Error(), "ERR") {
		return err
	}
	return nil
}

// TestSnapshotFrozenShardGrowsPastLimit fills one chunk of a pending
// shard until the shard holds keyspace.FrozenLoad keys per bucket: it must not
// grow before (its chunks would move), and at the limit its other chunk
// is copied before it grows. The file holds the opening's dataset.
func TestSnapshotFrozenShardGrowsPastLimit(t *testing.T) {
	s := newBareServer(t)
	db := s.dbs[0]
	sh := db.KeyShard("{f}")
	s.LockAll()
	for i := 0; sh.Len() < 400; i++ {
		db.SetString("{f}"+strconv.Itoa(i), []byte("old"), 0, false)
	}
	if sh.NumBuckets() != 512 || sh.Growing() {
		s.UnlockAll()
		t.Fatalf("%d buckets, growing %v", sh.NumBuckets(), sh.Growing())
	}
	want := snapCanonLocked(s)
	sn := s.persist.OpenLocked()
	s.UnlockAll()

	sh.Mu.Lock()
	added := 0
	for i := 0; sh.Len() < keyspace.FrozenLoad*512 && i < 1_000_000; i++ {
		k := "{f}new" + strconv.Itoa(i)
		if keyspace.KeyHash(k)&511 >= keyspace.ChunkBuckets {
			continue // chunk 1 stays pending
		}
		db.SetString(k, []byte("new"), 0, false)
		added++
		if sh.NumBuckets() != 512 {
			sh.Mu.Unlock()
			t.Fatalf("the pending shard grew at %d keys", sh.Len())
		}
	}
	if sh.PendingSnapshots() != 1 {
		sh.Mu.Unlock()
		t.Fatalf("%d snapshots listed before the limit", sh.PendingSnapshots())
	}
	for i := keyspace.ChunkBuckets; i < 512; i++ {
		if sh.BucketCopied(i) {
			sh.Mu.Unlock()
			t.Fatalf("bucket %d copied before the limit", i)
		}
	}
	db.SetString("{f}last", []byte("new"), 0, false) // count is at the limit: grows
	grown, listed := sh.NumBuckets(), sh.PendingSnapshots()
	// A change to the other chunk now is after its copy.
	for i := 0; i < 400; i++ {
		db.Remove("{f}" + strconv.Itoa(i))
	}
	sh.Mu.Unlock()
	if grown <= 512 || listed != 0 {
		t.Fatalf("at the limit: %d buckets, %d snapshots listed", grown, listed)
	}
	var buf bytes.Buffer
	if err := sn.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	got := snapCanonRDB(t, buf.Bytes())
	if len(got) != len(want) {
		t.Fatalf("%d keys in the file, %d at the opening (%d added after)", len(got), len(want), added)
	}
	for k, w := range want {
		if got[k] != w {
			t.Fatalf("key %s: got %q, want %q", k, got[k], w)
		}
	}
}

// TestSnapshotSideBlocks writes, while a snapshot is open and its writer
// has not started, more keys of one shard than a side block holds: the
// clients' copies go to a chain of fixed-size blocks (never a grown
// buffer), and the file still holds exactly the opening's dataset.
func TestSnapshotSideBlocks(t *testing.T) {
	s := newBareServer(t)
	db := s.dbs[0]
	sh := db.KeyShard("{b}")
	big := bytes.Repeat([]byte("v"), 300) // 3 keys per 1 kB of arena
	s.LockAll()
	for i := 0; i < 3*keyspace.SideRecs; i++ {
		db.SetString("{b}"+strconv.Itoa(i), big, 0, false)
	}
	want := snapCanonLocked(s)
	sn := s.persist.OpenLocked()
	s.UnlockAll()

	sh.Mu.Lock()
	for i := 0; i < 3*keyspace.SideRecs; i++ {
		k := "{b}" + strconv.Itoa(i)
		db.SnapTouchKey(k) // as the dispatcher does before a write
		db.SetString(k, []byte("new"), 0, false)
	}
	// Blocks recycled from writer buffers (a process-wide pool that
	// earlier saves fill) may be larger, never smaller; a larger block
	// takes more copies, so the chain is only as long as its capacity
	// needs.
	blocks, minArena, maxArena := sn.SideBlocks(sh)
	sh.Mu.Unlock()
	if blocks > 0 && minArena < keyspace.SideArena {
		t.Fatalf("a side block's arena capacity is %d", minArena)
	}
	if min := 3 * keyspace.SideRecs * len(big) / max(maxArena, keyspace.SideArena); blocks < max(min, 1) {
		t.Fatalf("%d side blocks (arenas of %d..%d bytes) for %d copied keys, want at least %d", blocks, minArena, maxArena, 3*keyspace.SideRecs, min)
	}
	var buf bytes.Buffer
	if err := sn.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	got := snapCanonRDB(t, buf.Bytes())
	if len(got) != len(want) {
		t.Fatalf("%d keys in the file, %d at the opening", len(got), len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Fatalf("key %s: got %q, want %q", k, got[k], w)
		}
	}
}
