package sentinel

import "time"

// The election rule for acknowledged writes (docs/ARCHITECTURE.md,
// "Acknowledged writes").
//
// A shardnode master with min-replicas-ack n replies to a write only after
// n of its R eligible replicas (priority above 0) acknowledged it, and says
// so in INFO replication (min_replicas_ack, min_replicas_ack_eligible;
// redis-server has neither field, and the rule is off). The leader of a
// failover freezes the replicas first (freeze.go: CLIENT PAUSE WRITE, then
// INFO): a frozen replica's acknowledgements never exceed its frozen
// offset (what follows it in the stream holds no write). So the Sentinel
// promotes only a replica whose frozen offset is the highest among at
// least R−n+1 eligible replicas frozen in this failover: any acknowledged
// write, acknowledged before or after the freeze, was acknowledged by n
// replicas, so by one of those R−n+1 (pigeonhole: only n−1 are missing),
// whose frozen offset therefore covers it; the promoted replica's offset
// is the highest, and the stream is one history, so it holds the write.
// No read-after-the-master-stopped cutoff is needed: the argument does not
// depend on when the master stopped. While fewer replicas are frozen,
// the failover waits in select_slave (up to failover-timeout), instead of
// promoting a replica that may lack writes. The guarantee needs the frozen
// replicas to stay paused until they are reconfigured (freeze.go).

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
// replicaEligible) by the rule: it keeps those whose frozen offset is the
// highest among the ones frozen in this failover, and reports wait when
// too few of them are frozen yet. Outside a failover (SENTINEL FAILOVER's
// check that a replica exists) there is no freeze and no narrowing.
func (m *Machine) ackCandidates(now time.Time, master *instance, cands []*instance) (out []*instance, wait bool) {
	if master.ackNeed <= 0 || !master.has(flagFailoverInProgress) {
		return cands, false
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
	var frozen []*instance
	var best int64 = -1
	for _, r := range cands {
		if frozenIn(master, r) {
			frozen = append(frozen, r)
			best = max(best, r.frozenOffset)
		}
	}
	if len(frozen) < ackReadsNeeded(eligible, master.ackNeed) {
		return nil, true
	}
	for _, r := range frozen {
		if r.frozenOffset == best {
			out = append(out, r)
		}
	}
	return out, false
}
