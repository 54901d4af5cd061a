package script

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/shardis/shardis/internal/consistent"
)

func TestKillSwitch(t *testing.T) {
	k := NewKillSwitch()
	if k.Err() != nil {
		t.Fatal("fresh switch fired")
	}
	k.Fire()
	k.Fire()
	select {
	case <-k.Done():
	default:
		t.Fatal("Done not closed after Fire")
	}
	if !errors.Is(k.Err(), context.Canceled) {
		t.Fatalf("Err = %v", k.Err())
	}
}

func TestClusterRefusal(t *testing.T) {
	a, b := []byte("{a}1"), []byte("{b}1")
	sa := consistent.KeySlot("{a}1")
	servesA := func(s int) bool { return s == sa }
	all := func(int) bool { return true }
	for _, tc := range []struct {
		name  string
		call  ClusterCall
		slot  int
		want  string
		after int
	}{
		{"no keys while down", ClusterCall{Args: [][]byte{[]byte("ping")}, Down: true}, -1, "", -1},
		{"down write", ClusterCall{Args: [][]byte{[]byte("set"), a}, Keys: []int{1}, Down: true, Write: true}, -1, "Script attempted to execute a write command while the cluster is down and readonly", -1},
		{"down read", ClusterCall{Args: [][]byte{[]byte("get"), a}, Keys: []int{1}, Down: true}, -1, "Script attempted to execute a command while the cluster is down", -1},
		{"first key sets slot", ClusterCall{Args: [][]byte{[]byte("get"), a}, Keys: []int{1}, Serves: servesA}, -1, "", sa},
		{"not served", ClusterCall{Args: [][]byte{[]byte("get"), b}, Keys: []int{1}, Serves: servesA}, -1, "Script attempted to access a non local key in a cluster node", -1},
		{"two slots in one call", ClusterCall{Args: [][]byte{[]byte("mget"), a, b}, Keys: []int{1, 2}, Serves: all}, -1, "Script attempted to access a non local key in a cluster node", -1},
		{"other slot than the script's", ClusterCall{Args: [][]byte{[]byte("get"), b}, Keys: []int{1}, Serves: all}, sa, "Script attempted to access keys that do not hash to the same slot", sa},
		{"cross-slot allowed", ClusterCall{Args: [][]byte{[]byte("get"), b}, Keys: []int{1}, Serves: all, CrossSlot: true}, sa, "", sa},
	} {
		slot := tc.slot
		if got := ClusterRefusal(&tc.call, &slot); got != tc.want || slot != tc.after {
			t.Errorf("%s: got %q slot %d, want %q slot %d", tc.name, got, slot, tc.want, tc.after)
		}
	}
}

func TestWrapEffects(t *testing.T) {
	one := [][][]byte{{[]byte("SET"), []byte("k"), []byte("v")}}
	if got := WrapEffects(one); len(got) != 1 {
		t.Errorf("one command wrapped: %q", got)
	}
	two := append(one, [][]byte{[]byte("DEL"), []byte("k")})
	got := WrapEffects(two)
	if len(got) != 4 || string(got[0][0]) != "MULTI" || string(got[2][0]) != "DEL" || string(got[3][0]) != "EXEC" {
		t.Errorf("two commands: %q", got)
	}
}

func TestSlogLevel(t *testing.T) {
	for level, want := range map[int]slog.Level{LogDebug: slog.LevelDebug, LogVerbose: slog.LevelDebug, LogNotice: slog.LevelInfo, LogWarning: slog.LevelWarn} {
		if got := SlogLevel(level); got != want {
			t.Errorf("level %d: got %v, want %v", level, got, want)
		}
	}
}
