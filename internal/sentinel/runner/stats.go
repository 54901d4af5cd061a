package runner

import (
	"strconv"
	"sync"
	"time"

	"github.com/shardis/shardis/internal/sentinel"
)

// Stats is a read-only snapshot of a Sentinel's state, for metrics.
type Stats struct {
	// CurrentEpoch is the Sentinel's current epoch.
	CurrentEpoch uint64
	// Tilt tells whether the Sentinel is in TILT mode.
	Tilt bool
	// Masters are the monitored masters, sorted by name.
	Masters []MasterStats
}

// MasterStats is one monitored master in [Stats].
type MasterStats struct {
	Name string
	// Addr is the master's "ip:port" as this Sentinel knows it.
	Addr string
	// Status is "ok", "sdown" (subjectively down) or "odown" (objectively
	// down).
	Status string
	// Replicas is the number of known replicas.
	Replicas int
	// Sentinels is the number of known Sentinels, this one included.
	Sentinels int
	// Quorum is the configured quorum.
	Quorum int
	// ConfigEpoch is the master's configuration epoch.
	ConfigEpoch uint64
	// FailoverInProgress tells whether a failover of this master is
	// running (led by this Sentinel).
	FailoverInProgress bool
	// Switches counts the +switch-master events this Sentinel published for
	// the master since it started: failovers it led or learned of.
	Switches uint64
	// FailoversLed counts the failovers of this master this Sentinel led
	// to their end (+failover-end) since it started.
	FailoversLed uint64
}

// eventCounts counts the events Stats reports, per master.
type eventCounts struct {
	mu       sync.Mutex
	switches map[string]uint64
	led      map[string]uint64
}

// observe is called for every event the Runner publishes.
func (c *eventCounts) observe(e sentinel.Event) {
	if e.Type != sentinel.EventSwitchMaster && e.Type != sentinel.EventFailoverEnd {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.switches == nil {
		c.switches, c.led = map[string]uint64{}, map[string]uint64{}
	}
	name := e.Master
	if e.Type == sentinel.EventSwitchMaster {
		if name == "" {
			if sm, err := sentinel.ParseSwitchMaster(e.Payload); err == nil {
				name = sm.Name
			}
		}
		c.switches[name]++
	} else {
		c.led[name]++
	}
}

func (c *eventCounts) get(name string) (switches, led uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.switches[name], c.led[name]
}

// Stats returns a snapshot of the Sentinel's state.
func (r *Runner) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	_, sums := r.m.Summary(now)
	st := Stats{CurrentEpoch: r.m.CurrentEpoch(), Tilt: r.m.Tilt()}
	for _, s := range sums {
		ms := MasterStats{Name: s.Name, Addr: s.Addr.String(), Status: s.Status,
			Replicas: s.Replicas, Sentinels: s.Sentinels}
		if fields, err := r.m.MasterFields(now, s.Name); err == nil {
			for i := 0; i+1 < len(fields); i += 2 {
				switch fields[i] {
				case "quorum":
					ms.Quorum, _ = strconv.Atoi(fields[i+1])
				case "config-epoch":
					ms.ConfigEpoch, _ = strconv.ParseUint(fields[i+1], 10, 64)
				case "failover-state":
					ms.FailoverInProgress = fields[i+1] != "" && fields[i+1] != "none"
				}
			}
		}
		ms.Switches, ms.FailoversLed = r.events.get(s.Name)
		st.Masters = append(st.Masters, ms)
	}
	return st
}
