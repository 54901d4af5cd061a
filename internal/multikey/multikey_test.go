package multikey

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/redis/go-redis/v9"
)

// group puts a key in the group named by its first byte ('a' → 0, 'b' → 1 ...).
func group(key string) (int, error) {
	if key == "" {
		return 0, errors.New("empty key")
	}
	return int(key[0] - 'a'), nil
}

func TestSplitMergeMGET(t *testing.T) {
	ctx := context.Background()
	args := []interface{}{"mget", "b1", "a1", "b2", "c1"}
	parts, err := Split(ctx, "mget", args, 1, group)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]interface{}
	for _, pt := range parts {
		got = append(got, pt.Cmd.Args())
	}
	want := [][]interface{}{{"mget", "b1", "b2"}, {"mget", "a1"}, {"mget", "c1"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parts %v, want %v (groups in first-appearance order)", got, want)
	}
	// Each part answers its keys' values; the merge puts them back in order.
	parts[0].Cmd.(*redis.SliceCmd).SetVal([]interface{}{"vb1", nil})
	parts[1].Cmd.(*redis.SliceCmd).SetVal([]interface{}{"va1"})
	parts[2].Cmd.(*redis.SliceCmd).SetVal([]interface{}{"vc1"})
	cmd := redis.NewSliceCmd(ctx, args...)
	if err := Merge(cmd, "mget", args, 1, parts); err != nil {
		t.Fatal(err)
	}
	if v := cmd.Val(); !reflect.DeepEqual(v, []interface{}{"vb1", "va1", nil, "vc1"}) {
		t.Fatalf("merged %v", v)
	}
}

func TestSplitMergeMSETAndCounts(t *testing.T) {
	ctx := context.Background()
	args := []interface{}{"mset", "a1", 1, "b1", 2, "a2", 3}
	parts, err := Split(ctx, "mset", args, 2, group)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || !reflect.DeepEqual(parts[0].Cmd.Args(), []interface{}{"mset", "a1", 1, "a2", 3}) {
		t.Fatalf("mset parts %v", parts[0].Cmd.Args())
	}
	cmd := redis.NewStatusCmd(ctx, args...)
	for _, pt := range parts {
		pt.Cmd.(*redis.StatusCmd).SetVal("OK")
	}
	if err := Merge(cmd, "mset", args, 2, parts); err != nil || cmd.Val() != "OK" {
		t.Fatalf("mset merge %q %v", cmd.Val(), err)
	}

	dargs := []interface{}{"del", "a", "b", "c", "a2"}
	dparts, _ := Split(ctx, "del", dargs, 1, group)
	for i, pt := range dparts {
		pt.Cmd.(*redis.IntCmd).SetVal(int64(i + 1))
	}
	del := redis.NewIntCmd(ctx, dargs...)
	if err := Merge(del, "del", dargs, 1, dparts); err != nil || del.Val() != 6 {
		t.Fatalf("del merge %d %v, want 1+2+3", del.Val(), err)
	}
}

func TestSplitErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := Split(ctx, "mset", []interface{}{"mset", "a", 1, "b"}, 2, group); !errors.Is(err, ErrArity) {
		t.Fatalf("odd MSET: %v", err)
	}
	if _, err := Split(ctx, "mget", []interface{}{"mget"}, 1, group); !errors.Is(err, ErrArity) {
		t.Fatalf("MGET without keys: %v", err)
	}
	if _, err := Split(ctx, "mget", []interface{}{"mget", "a", ""}, 1, group); err == nil || err.Error() != "empty key" {
		t.Fatalf("group error: %v", err)
	}
	// A failed part fails the merge with the part's group and error.
	args := []interface{}{"exists", "a", "b"}
	parts, _ := Split(ctx, "exists", args, 1, group)
	parts[0].Cmd.(*redis.IntCmd).SetVal(1)
	parts[1].Cmd.SetErr(errors.New("CLUSTERDOWN The cluster is down"))
	cmd := redis.NewIntCmd(ctx, args...)
	err := Merge(cmd, "exists", args, 1, parts)
	var pe *PartError
	if !errors.As(err, &pe) || pe.Group != 1 || err.Error() != "CLUSTERDOWN The cluster is down" {
		t.Fatalf("merge of a failed part: %v", err)
	}
}

func TestArgString(t *testing.T) {
	for _, c := range []struct {
		in   interface{}
		want string
	}{{"s", "s"}, {[]byte("b"), "b"}, {42, "42"}, {int64(-7), "-7"}, {uint64(9), "9"}, {1.5, "1.5"}, {true, "1"}, {false, "0"}, {nil, ""}} {
		if got := ArgString(c.in); got != c.want {
			t.Errorf("ArgString(%#v) = %q, want %q", c.in, got, c.want)
		}
	}
}
