package node

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestSetGet(t *testing.T) {
	ts := startServer(t)
	for _, proto := range []int{2, 3} {
		rc := ts.client(t, proto)
		c := ctx(t)
		if err := rc.Set(c, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if v, err := rc.Get(c, "k").Result(); err != nil || v != "v" {
			t.Fatalf("GET = %q, %v", v, err)
		}
		if err := rc.Get(c, "missing").Err(); err != redis.Nil {
			t.Fatalf("GET missing: %v", err)
		}
	}
}

func TestSetOptions(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	t.Run("NX", func(t *testing.T) {
		ok, err := rc.SetNX(c, "nx", "1", 0).Result()
		if err != nil || !ok {
			t.Fatalf("first SET NX: %v %v", ok, err)
		}
		ok, err = rc.SetNX(c, "nx", "2", 0).Result()
		if err != nil || ok {
			t.Fatalf("second SET NX: %v %v", ok, err)
		}
	})
	t.Run("XX", func(t *testing.T) {
		ok, err := rc.SetXX(c, "xx", "1", 0).Result()
		if err != nil || ok {
			t.Fatalf("SET XX missing: %v %v", ok, err)
		}
	})
	t.Run("PX", func(t *testing.T) {
		rc.Set(c, "px", "1", 50*time.Millisecond)
		if rc.Exists(c, "px").Val() != 1 {
			t.Fatal("key missing right after SET PX")
		}
		time.Sleep(80 * time.Millisecond)
		if rc.Exists(c, "px").Val() != 0 {
			t.Fatal("expired key still visible")
		}
	})
	t.Run("Errors", func(t *testing.T) {
		r := ts.raw(t)
		r.expect("SET a b NX XX\r\n", "-ERR syntax error")
		r.expect("SET a b EX 0\r\n", "-ERR invalid expire time in 'set' command")
		r.expect("SET a b EX x\r\n", "-ERR value is not an integer or out of range")
		r.expect("SET a\r\n", "-ERR wrong number of arguments for 'set' command")
	})
}

func TestIncr(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	r.expect("INCR n\r\n", ":1")
	r.expect("INCRBY n 10\r\n", ":11")
	r.expect("SET n 9223372036854775807\r\n", "+OK")
	r.expect("INCR n\r\n", "-ERR increment or decrement would overflow")
	r.expect("SET s abc\r\n", "+OK")
	r.expect("INCR s\r\n", "-ERR value is not an integer or out of range")
}

func TestMultiExec(t *testing.T) {
	ts := startServer(t)
	r := ts.raw(t)
	r.expect("MULTI\r\n", "+OK")
	r.expect("SET a 1\r\n", "+QUEUED")
	r.expect("INCR a\r\n", "+QUEUED")
	r.send("EXEC\r\n")
	for _, want := range []string{"*2", "+OK", ":2"} {
		if got := r.readLine(); got != want {
			t.Fatalf("EXEC reply: got %q want %q", got, want)
		}
	}
	r.expect("MULTI\r\n", "+OK")
	r.expect("NOSUCH\r\n", "-ERR unknown command 'NOSUCH', with args beginning with: ")
	r.expect("EXEC\r\n", "-EXECABORT Transaction discarded because of previous errors.")

	// WATCH broken by another client's write.
	other := ts.raw(t)
	r.expect("WATCH w\r\n", "+OK")
	other.expect("SET w x\r\n", "+OK")
	r.expect("MULTI\r\n", "+OK")
	r.expect("SET w y\r\n", "+QUEUED")
	r.expect("EXEC\r\n", "*-1")
}

func TestPubSub(t *testing.T) {
	ts := startServer(t)
	rc := ts.client(t)
	c := ctx(t)
	sub := rc.Subscribe(c, "ch")
	defer sub.Close()
	if _, err := sub.Receive(c); err != nil {
		t.Fatal(err)
	}
	if n := rc.Publish(c, "ch", "hello").Val(); n != 1 {
		t.Fatalf("PUBLISH receivers = %d", n)
	}
	msg, err := sub.ReceiveMessage(c)
	if err != nil || msg.Payload != "hello" || msg.Channel != "ch" {
		t.Fatalf("message %+v %v", msg, err)
	}
}
