package persist

import (
	"math/rand/v2"
	"time"
)

// DebugDelay sleeps usec microseconds per key for rdb-key-save-delay and
// key-load-delay, as Redis's debugDelay: a negative value sleeps 1 µs with
// probability 1/-usec (short sleeps, statistically).
func DebugDelay(usec int64) {
	if usec < 0 {
		if rand.Int64N(-usec) != 0 {
			return
		}
		usec = 1
	}
	time.Sleep(time.Duration(usec) * time.Microsecond)
}
