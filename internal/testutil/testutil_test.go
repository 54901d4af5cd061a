package testutil

import (
	"fmt"
	"testing"
)

func TestStartRedisAndSentinel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	r := StartRedis(t)
	if err := Ping(r.Addr); err != nil {
		t.Fatal(err)
	}
	s := StartSentinel(t, fmt.Sprintf("sentinel monitor m 127.0.0.1 %d 1", r.Port))
	if err := Ping(s.Addr); err != nil {
		t.Fatal(err)
	}
	r.Kill()
	if err := Ping(r.Addr); err == nil {
		t.Fatal("redis still answers after Kill")
	}
	r.Restart()
	if err := Ping(r.Addr); err != nil {
		t.Fatalf("after Restart: %v", err)
	}
}
