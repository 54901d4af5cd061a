package clients

import (
	"strconv"
	"strings"
	"time"
)

// Client classes of client-output-buffer-limit.
const (
	ClassNormal = iota
	ClassReplica
	ClassPubSub
	Classes
)

// OutputLimit is one class's client-output-buffer-limit (0: no limit).
type OutputLimit struct {
	Hard, Soft int64
	SoftFor    time.Duration
}

// ParseOutputLimits reads client-output-buffer-limit (stored as "class
// hard soft seconds" groups of plain integers); the last group of a class
// wins, as when Redis applies them in order.
func ParseOutputLimits(v string) (l [Classes]OutputLimit) {
	f := strings.Fields(v)
	for i := 0; i+3 < len(f); i += 4 {
		class := -1
		switch f[i] {
		case "normal":
			class = ClassNormal
		case "slave", "replica":
			class = ClassReplica
		case "pubsub":
			class = ClassPubSub
		}
		if class < 0 {
			continue
		}
		hard, _ := strconv.ParseInt(f[i+1], 10, 64)
		soft, _ := strconv.ParseInt(f[i+2], 10, 64)
		secs, _ := strconv.ParseInt(f[i+3], 10, 64)
		l[class] = OutputLimit{Hard: hard, Soft: soft, SoftFor: time.Duration(secs) * time.Second}
	}
	return l
}

// OutputTimer tracks one client's soft limit: since when its pending
// output has been over it. The zero OutputTimer is ready.
type OutputTimer struct {
	softSince time.Time
}

// Exceeded reports whether a pending output of n bytes breaks lim: the
// hard limit at once, the soft one once it lasted SoftFor (the clock is
// read only over the soft limit).
func (t *OutputTimer) Exceeded(lim *OutputLimit, n int, now func() time.Time) bool {
	if lim.Hard > 0 && int64(n) >= lim.Hard {
		return true
	}
	if lim.Soft > 0 && int64(n) >= lim.Soft {
		if t.softSince.IsZero() {
			t.softSince = now()
		} else if now().Sub(t.softSince) >= lim.SoftFor {
			return true
		}
	} else {
		t.softSince = time.Time{}
	}
	return false
}
