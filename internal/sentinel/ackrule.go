package sentinel

import "time"

// The election rule for acknowledged writes (docs/ARCHITECTURE.md,
// "Acknowledged writes").
//
// A shardnode master with min-replicas-ack n replies to a write only after
// n of its R eligible replicas (priority above 0) acknowledged it, and says
// so in INFO replication (min_replicas_ack, min_replicas_ack_eligible;
// redis-server has neither field, and the rule is off). Any R−n+1 eligible
// replicas then include one that acknowledged every acknowledged write
// (pigeonhole: only n−1 can be missing a given write). So the Sentinel
// promotes only a replica whose replication offset is the highest among at
// least R−n+1 eligible replicas whose offsets it read after the master
// stopped (INFO asked after the master went subjectively down, or later
// when the master has a Sentinel fence, below): that replica holds every
// acknowledged write. While fewer such replicas answer,
// the failover waits in select_slave (up to failover-timeout), instead of
// promoting a replica that may lack writes.

// ackReadsNeeded is R−n+1: how many eligible replicas' offsets must be
// read before one is promoted, with n of R eligible replicas acknowledging
// every write. n ≤ 0 (the rule off) needs none.
func ackReadsNeeded(eligible, need int) int {
	if need <= 0 {
		return 0
	}
	return max(eligible-need+1, 1)
}

// ackCandidates narrows the promotable replicas cands (already filtered by
// replicaEligible) by the rule: it keeps those whose offset is the highest
// among the ones read after the master stopped, and reports wait when too
// few of them were read yet.
func (m *Machine) ackCandidates(now time.Time, master *instance, cands []*instance) (out []*instance, wait bool) {
	if master.ackNeed <= 0 {
		return cands, false
	}
	// Since when an offset counts as read after the master stopped: the
	// INFO must have been asked after it.
	cutoff := master.sDownSince
	if !master.has(flagSDown) {
		cutoff = master.failoverStartTime // a forced failover of a live master
	} else if master.ackLease > 0 && !master.oDownSince.IsZero() {
		// The master's Sentinel fence (node/repl/fence.go): a master cut
		// from the quorum that saw it down stops acknowledging by
		// ODOWN − down-after + lease at the latest.
		if t := master.oDownSince.Add(master.ackLease - master.downAfter); t.After(cutoff) {
			cutoff = t
		}
	}
	// R: the master's count, or more if more eligible replicas answer.
	eligible := master.ackEligible
	fresh := 0
	for _, r := range master.sortedReplicas() {
		if r.replPriority > 0 && !r.infoRefresh.IsZero() && now.Sub(r.infoRefresh) <= 3*m.timing.InfoPeriod {
			fresh++
		}
	}
	eligible = max(eligible, fresh)
	var read []*instance
	var best int64 = -1
	for _, r := range cands {
		if r.infoAsked.After(cutoff) {
			read = append(read, r)
			best = max(best, r.replOffset)
		}
	}
	if len(read) < ackReadsNeeded(eligible, master.ackNeed) {
		return nil, true
	}
	for _, r := range read {
		if r.replOffset == best {
			out = append(out, r)
		}
	}
	return out, false
}
