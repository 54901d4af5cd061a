package cluster

import (
	"time"
)

// handshakeInProgress reports whether a handshake node exists for the
// address (clusterHandshakeInProgress).
func (m *Machine) handshakeInProgress(ip string, port, cport int) bool {
	for _, n := range m.order {
		if n.inHandshake() && equalFoldASCII(n.ip, ip) && n.port == port && n.cport == cport {
			return true
		}
	}
	return false
}

// startHandshake adds a handshake node with a random name for ip:port,
// flagged MEET so the first packet on its link is a MEET
// (clusterStartHandshake). It returns errInvalidAddr for a bad address,
// and false without error when a handshake is already in progress.
func (m *Machine) startHandshake(ip string, port, cport int) (bool, error) {
	norm, ok := normalizeIP(ip)
	if !ok || port <= 0 || port > 65535 || cport <= 0 || cport > 65535 {
		return false, errInvalidAddr
	}
	if m.handshakeInProgress(norm, port, cport) {
		return false, nil
	}
	n := m.createNode(m.now, Name{}, FlagHandshake|FlagMeet)
	n.ip, n.port, n.cport = norm, port, cport
	m.addNode(n)
	m.event(EventHandshakeStarted, n.name, norm)
	return true, nil
}

// blacklisted reports whether FORGET put name on the blacklist less than
// a minute ago, dropping expired entries (clusterBlacklistExists).
func (m *Machine) blacklisted(name Name) bool {
	m.blacklistCleanup()
	_, ok := m.blacklist[name]
	return ok
}

func (m *Machine) blacklistCleanup() {
	for k, exp := range m.blacklist {
		if m.now.After(exp) {
			delete(m.blacklist, k)
		}
	}
}

func (m *Machine) blacklistAdd(name Name) {
	m.blacklistCleanup()
	m.blacklist[name] = m.now.Add(blacklistTTL)
}

func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromUnixMs(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
