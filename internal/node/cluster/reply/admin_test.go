package reply

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
)

func TestAdminChecks(t *testing.T) {
	cases := []struct {
		sub  string
		args []string
		want string
	}{
		{"meet", []string{"1.2.3.4", "7000"}, ""},
		{"meet", []string{"1.2.3.4", "7000", "17000"}, ""},
		{"meet", []string{"1.2.3.4", "7000", "17000", "x"}, ErrSubSyntax},
		{"failover", []string{"force"}, ""},
		{"failover", []string{"force", "x"}, ErrSubSyntax},
		{"addslotsrange", []string{"0", "5", "7"}, "ERR wrong number of arguments for 'cluster|addslotsrange' command"},
		{"delslotsrange", []string{"0"}, "ERR wrong number of arguments for 'cluster|delslotsrange' command"},
		{"addslots", []string{"0", "1", "2"}, ""},
	}
	for _, tc := range cases {
		a := AdminCommand(tc.sub)
		if a == nil {
			t.Fatalf("%s: no admin command", tc.sub)
		}
		if got := a.Check(tc.args); got != tc.want {
			t.Errorf("%s %v: %q, want %q", tc.sub, tc.args, got, tc.want)
		}
	}
	if AdminCommand("nodes") != nil || AdminCommand("reset") != nil {
		t.Error("NODES and RESET are not machine admin commands")
	}
}

// The subcommands run on a real machine: its errors come back as
// *cluster.Error with Redis's text, results in the right kind.
func TestAdminRun(t *testing.T) {
	cfg := cluster.DefaultConfig()
	cfg.Port, cfg.CPort = 7000, 17000
	m, err := cluster.New(cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	run := func(sub string, args ...string) (Result, error) {
		t.Helper()
		return AdminCommand(sub).Run(m, now, args)
	}
	if res, err := run("addslotsrange", "0", "9"); err != nil || res.Kind != OK {
		t.Fatalf("addslotsrange: %v %v", res, err)
	}
	_, err = run("addslots", "5")
	var ce *cluster.Error
	if !errors.As(err, &ce) || ce.Text != "ERR Slot 5 is already busy" {
		t.Fatalf("addslots busy: %v", err)
	}
	if res, err := run("count-failure-reports", m.MyID()); err != nil || res.Kind != Integer || res.Int != 0 {
		t.Fatalf("count-failure-reports: %v %v", res, err)
	}
	if res, err := run("replicas", m.MyID()); err != nil || res.Kind != Strings || len(res.Strings) != 0 {
		t.Fatalf("replicas: %v %v", res, err)
	}
	if _, err := run("forget", m.MyID()); !errors.As(err, &ce) || ce.Text != "ERR I tried hard but I can't forget myself..." {
		t.Fatalf("forget myself: %v", err)
	}
}
