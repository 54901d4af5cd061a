package runner_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestE2EFreezeMixedReplicas: a shardnode master with min-replicas-ack 1,
// one shardnode and one redis-server replica, and the in-process Sentinel.
// When the master dies the leader freezes both replicas (CLIENT PAUSE, then
// INFO: the election needs both frozen offsets, so the failover finishing
// shows that the runner sent the pause to, and parsed the INFO of, either
// kind of replica), promotes one, and the REPLICAOF MULTIs unpause both:
// afterwards neither holds a PUBLISH (a write for CLIENT PAUSE WRITE) and
// the other replica follows the new master.
func TestE2EFreezeMixedReplicas(t *testing.T) {
	needE2E(t)
	bin := shardnodeBinary(t)
	mport := freePort(t)
	master := startProc(t, bin, mport, "--port", strconv.Itoa(mport), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--min-replicas-ack", "1", "--repl-diskless-sync-delay", "0")
	reps := []*proc{startServer(t, bin, mport), startRedis(t, mport)}
	ctx := context.Background()
	clients := map[string]*redis.Client{}
	for _, r := range reps {
		rc := redis.NewClient(&redis.Options{Addr: addrOf(r.port), ReadTimeout: 2 * time.Second, MaxRetries: -1})
		t.Cleanup(func() { rc.Close() })
		clients[addrOf(r.port)] = rc
	}
	mc := redis.NewClient(&redis.Options{Addr: addrOf(mport), MaxRetries: -1})
	defer mc.Close()
	waitFor(t, 15*time.Second, "both replicas synced", func() bool {
		if mc.Set(ctx, "k", "before", 0).Err() != nil {
			return false
		}
		for _, rc := range clients {
			if v, _ := rc.Get(ctx, "k").Result(); v != "before" {
				return false
			}
		}
		return true
	})
	port := freePort(t)
	startInProcess(t, "port "+strconv.Itoa(port)+"\nbind 127.0.0.1\nsentinel monitor mymaster 127.0.0.1 "+
		strconv.Itoa(mport)+" 1\nsentinel down-after-milliseconds mymaster 500\nsentinel failover-timeout mymaster 6000\n")
	sc := sentinelClient(t, port)
	waitFor(t, 20*time.Second, "both replicas discovered", func() bool {
		rs, err := sc.Replicas(ctx, "mymaster").Result()
		return err == nil && len(rs) == 2
	})
	// The replicas are learnt from the master's INFO, which carries
	// min_replicas_ack: the failover freezes.
	sub := redis.NewClient(&redis.Options{Addr: addrOf(port)}).PSubscribe(ctx, "*")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	startedAt := time.Now()
	master.kill()
	var seen []string
	frozen := map[string]bool{}
	deadline := time.After(40 * time.Second)
	for done := false; !done; {
		select {
		case msg := <-sub.Channel():
			seen = append(seen, msg.Channel)
			switch msg.Channel {
			case "+freeze-slave":
				frozen[strings.Fields(msg.Payload)[1]] = true
			case "+selected-slave":
				if len(frozen) != 2 {
					t.Fatalf("+selected-slave after freezing %v: want both replicas frozen first", frozen)
				}
			case "+failover-end":
				done = true
			}
		case <-deadline:
			t.Fatalf("no +failover-end %v after the kill; events %v", time.Since(startedAt), seen)
		}
	}
	addr, err := sc.GetMasterAddrByName(ctx, "mymaster").Result()
	if err != nil {
		t.Fatal(err)
	}
	newMaster := addr[0] + ":" + addr[1]
	for a, rc := range clients {
		if err := rc.Publish(ctx, "ch", "x").Err(); err != nil {
			t.Fatalf("PUBLISH on %s after the failover: %v (still paused?)", a, err)
		}
	}
	if err := clients[newMaster].Set(ctx, "k", "after", 0).Err(); err != nil {
		t.Fatalf("write on the new master %s: %v", newMaster, err)
	}
	for a, rc := range clients {
		if a == newMaster {
			continue
		}
		waitFor(t, 15*time.Second, "the other replica to follow the new master", func() bool {
			v, _ := rc.Get(ctx, "k").Result()
			return v == "after"
		})
	}
}
