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

// recorder is a testing.TB that records Fatalf and Skipf instead of
// stopping the test.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper()                        {}
func (r *recorder) Fatalf(format string, a ...any) { r.fatal = fmt.Sprintf(format, a...) }
func (r *recorder) Skipf(format string, a ...any)  { r.skip = fmt.Sprintf(format, a...) }

func TestMissingBinaryFailsInCI(t *testing.T) {
	const name = "shardis-no-such-binary"
	t.Setenv("CI", "true")
	r := &recorder{TB: t}
	LookPath(r, name)
	if r.fatal == "" || r.skip != "" {
		t.Fatalf("CI=true: fatal %q, skip %q; want a failure", r.fatal, r.skip)
	}
	t.Setenv("CI", "")
	r = &recorder{TB: t}
	Binary(r, name)
	if r.skip == "" || r.fatal != "" {
		t.Fatalf("outside CI: fatal %q, skip %q; want a skip", r.fatal, r.skip)
	}
}
