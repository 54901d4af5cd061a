package script

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/shardis/shardis/internal/consistent"
)

// KillSwitch is the context scripts run under until SCRIPT KILL or
// FUNCTION KILL fires it. Its Done channel is fixed: the VM checks it at
// every instruction, and a plain channel is the cheapest check.
type KillSwitch struct {
	ch   chan struct{}
	once sync.Once
}

// NewKillSwitch returns a switch not fired yet.
func NewKillSwitch() *KillSwitch { return &KillSwitch{ch: make(chan struct{})} }

// Fire cancels the context; later calls do nothing.
func (k *KillSwitch) Fire() { k.once.Do(func() { close(k.ch) }) }

// Deadline is context.Context's: none.
func (k *KillSwitch) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done is closed by Fire.
func (k *KillSwitch) Done() <-chan struct{} { return k.ch }

// Err is context.Canceled once fired.
func (k *KillSwitch) Err() error {
	select {
	case <-k.ch:
		return context.Canceled
	default:
		return nil
	}
}

// Value is context.Context's: no values.
func (k *KillSwitch) Value(any) any { return nil }

var _ context.Context = (*KillSwitch)(nil)

// ClusterCall is one command a script calls in cluster mode, as
// ClusterRefusal checks it.
type ClusterCall struct {
	// Args are the command's arguments and Keys the positions of its keys.
	Args [][]byte
	Keys []int
	// Write: the command writes.
	Write bool
	// Down: the cluster state is not ok.
	Down bool
	// CrossSlot: the script may touch keys of several slots.
	CrossSlot bool
	// Serves reports whether this node serves the command's keys in slot
	// (it owns the slot, or a READONLY read from its master's slot).
	Serves func(slot int) bool
}

// ClusterRefusal is Redis's scriptVerifyClusterState: every key of the
// call in a slot this node serves, and (unless cross-slot keys are
// allowed) in the script's slot, *slot, set by its first key (-1 before).
// It returns the refusal, or "".
func ClusterRefusal(call *ClusterCall, slot *int) string {
	if len(call.Keys) == 0 {
		return ""
	}
	if call.Down {
		if call.Write {
			return "Script attempted to execute a write command while the cluster is down and readonly"
		}
		return "Script attempted to execute a command while the cluster is down"
	}
	cur := -1
	for _, p := range call.Keys {
		if p >= len(call.Args) {
			continue
		}
		ks := consistent.KeySlot(string(call.Args[p]))
		if cur >= 0 && ks != cur {
			return "Script attempted to access a non local key in a cluster node"
		}
		cur = ks
		if !call.Serves(ks) {
			return "Script attempted to access a non local key in a cluster node"
		}
	}
	if cur >= 0 && !call.CrossSlot {
		if *slot == -1 {
			*slot = cur
		} else if *slot != cur {
			return "Script attempted to access keys that do not hash to the same slot"
		}
	}
	return ""
}

// WrapEffects is what a script's effects propagate as: its commands,
// wrapped in MULTI/EXEC when there are more than one.
func WrapEffects(prop [][][]byte) [][][]byte {
	if len(prop) <= 1 {
		return prop
	}
	block := make([][][]byte, 0, len(prop)+2)
	block = append(block, [][]byte{[]byte("MULTI")})
	block = append(block, prop...)
	return append(block, [][]byte{[]byte("EXEC")})
}

// SlogLevel is the log/slog level redis.log's level logs at.
func SlogLevel(level int) slog.Level {
	switch level {
	case LogWarning:
		return slog.LevelWarn
	case LogNotice:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}
