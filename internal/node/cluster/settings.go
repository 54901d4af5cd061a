package cluster

import "time"

// Reconfigure applies the settings CONFIG SET may change on a running
// node (announced address and ports, hostname, node timeout, coverage and
// failover settings). The node name and Local are kept.
func (m *Machine) Reconfigure(now time.Time, c Config) {
	m.begin(now)
	defer m.end()
	c.Name = m.cfg.Name
	if c.Local == nil {
		c.Local = m.cfg.Local
	}
	if c.NodeTimeout <= 0 {
		c.NodeTimeout = m.cfg.NodeTimeout
	}
	if c.CPort == 0 {
		c.CPort = c.Port + PortIncr
	}
	m.cfg = c
	m.applyMyselfConfig()
	m.todo |= todoUpdateState
}
