package sentinel

import "testing"

func TestParseSwitchMaster(t *testing.T) {
	good := []struct {
		in   string
		want SwitchMaster
	}{
		{"mymaster 127.0.0.1 6379 127.0.0.1 6380", SwitchMaster{"mymaster", Addr{"127.0.0.1", 6379}, Addr{"127.0.0.1", 6380}}},
		{"m ::1 1 fe80::1 65535", SwitchMaster{"m", Addr{"::1", 1}, Addr{"fe80::1", 65535}}},
	}
	for _, tt := range good {
		got, err := ParseSwitchMaster(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseSwitchMaster(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		if p := got.Payload(); p != tt.in {
			t.Errorf("Payload() = %q, want %q", p, tt.in)
		}
	}
	for _, bad := range []string{
		"", "mymaster", "mymaster 127.0.0.1 6379 127.0.0.1",
		"mymaster 127.0.0.1 6379 127.0.0.1 6380 extra",
		"mymaster 127.0.0.1 x 127.0.0.1 6380", "mymaster 127.0.0.1 6379 127.0.0.1 0",
		"mymaster 127.0.0.1 6379 127.0.0.1 65536", "mymaster 127.0.0.1 -1 127.0.0.1 6380",
	} {
		if got, err := ParseSwitchMaster(bad); err == nil {
			t.Errorf("ParseSwitchMaster(%q) accepted: %+v", bad, got)
		}
	}
}

// TestSwitchMasterEventParses checks that the payload the machine
// publishes on +switch-master is what ParseSwitchMaster reads back.
func TestSwitchMasterEventParses(t *testing.T) {
	sm := SwitchMaster{Name: "mymaster", OldAddr: Addr{"10.0.0.1", 6379}, NewAddr: Addr{"10.0.0.2", 6380}}
	ev := Event{Type: EventSwitchMaster, Payload: sm.Payload()}
	if ev.String() != "+switch-master mymaster 10.0.0.1 6379 10.0.0.2 6380" {
		t.Fatalf("event renders %q", ev.String())
	}
	got, err := ParseSwitchMaster(ev.Payload)
	if err != nil || got != sm {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
}
