package sentinel

import (
	"sort"
	"strings"
	"time"
)

// voteLeader is sentinelVoteLeader: grant our vote for reqEpoch to reqRunID
// unless we already voted in that epoch. It returns our vote and its epoch.
func (m *Machine) voteLeader(now time.Time, master *instance, reqEpoch uint64, reqRunID string) (string, uint64) {
	if reqEpoch > m.currentEpoch {
		m.currentEpoch = reqEpoch
		m.persist()
		m.event(LevelWarning, EventNewEpoch, master, "%d", m.currentEpoch)
	}
	if master.leaderEpoch < reqEpoch && m.currentEpoch <= reqEpoch {
		master.leader = reqRunID
		master.leaderEpoch = m.currentEpoch
		m.persist()
		m.event(LevelWarning, EventVoteForLeader, master, "%s %d", master.leader, master.leaderEpoch)
		// Having voted for another, wait before trying ourselves.
		if !strings.EqualFold(master.leader, m.myID) {
			master.failoverStartTime = now.Add(m.desync())
		}
	}
	return master.leader, master.leaderEpoch
}

// getLeader is sentinelGetLeader: count the votes of the peers for the
// current epoch, cast ours, and return the winner if it has both an
// absolute majority of all known Sentinels and at least quorum votes.
func (m *Machine) getLeader(now time.Time, master *instance, epoch uint64) string {
	counts := map[string]int{}
	for _, s := range master.sentinels {
		if s.leader != "" && s.leaderEpoch == m.currentEpoch {
			counts[s.leader]++
		}
	}
	winner, maxVotes := mostVoted(counts)
	want := m.myID
	if winner != "" {
		want = winner
	}
	myVote, myEpoch := m.voteLeader(now, master, epoch, want)
	if myVote != "" && myEpoch == epoch {
		counts[myVote]++
		if counts[myVote] > maxVotes {
			winner, maxVotes = myVote, counts[myVote]
		}
	}
	voters := len(master.sentinels) + 1
	if winner != "" && !electionWon(maxVotes, voters, master.quorum) {
		return ""
	}
	return winner
}

// mostVoted returns the candidate with most votes; ties go to the smallest
// run id so the result does not depend on map order.
func mostVoted(counts map[string]int) (string, int) {
	ids := make([]string, 0, len(counts))
	for id := range counts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	winner, max := "", 0
	for _, id := range ids {
		if counts[id] > max {
			winner, max = id, counts[id]
		}
	}
	return winner, max
}

// electionWon: votes is an absolute majority of voters and reaches quorum.
func electionWon(votes, voters, quorum int) bool {
	return votes >= voters/2+1 && votes >= quorum
}

// selectReplica is sentinelSelectSlave: the best replica to promote, or nil.
func (m *Machine) selectReplica(now time.Time, master *instance) *instance {
	r, _ := m.selectReplicaAck(now, master)
	return r
}

// selectReplicaAck is selectReplica with the rule for acknowledged writes
// (ackrule.go): wait reports that no replica may be promoted yet because
// too few eligible replicas' offsets were read since the master stopped.
func (m *Machine) selectReplicaAck(now time.Time, master *instance) (*instance, bool) {
	maxDown := master.downAfter * 10
	if master.has(flagSDown) {
		maxDown += now.Sub(master.sDownSince)
	}
	var cands []*instance
	for _, r := range master.sortedReplicas() {
		if m.replicaEligible(now, master, r, maxDown) {
			cands = append(cands, r)
		}
	}
	cands, wait := m.ackCandidates(now, master, cands)
	sort.SliceStable(cands, func(i, j int) bool { return betterReplica(cands[i], cands[j]) })
	if len(cands) == 0 {
		return nil, wait
	}
	return cands[0], false
}

// replicaEligible applies Redis's exclusions: down, disconnected, not
// answering PING for 5 ping periods, priority 0, stale INFO, or
// disconnected from its master for too long.
func (m *Machine) replicaEligible(now time.Time, master, r *instance, maxMasterDown time.Duration) bool {
	if r.has(flagSDown|flagODown) || !r.link.connected {
		return false
	}
	if now.Sub(r.link.lastAvail) > 5*m.timing.PingPeriod {
		return false
	}
	if r.replPriority == 0 {
		return false
	}
	validity := 3 * m.timing.InfoPeriod
	if master.has(flagSDown) {
		validity = 5 * m.timing.PingPeriod
	}
	if r.infoRefresh.IsZero() || now.Sub(r.infoRefresh) > validity {
		return false
	}
	return r.masterLinkDownTime <= maxMasterDown
}

// betterReplica orders candidates: lower priority, then higher replication
// offset, then lexicographically smaller run id (unknown run ids last).
func betterReplica(a, b *instance) bool {
	if a.replPriority != b.replPriority {
		return a.replPriority < b.replPriority
	}
	if a.replOffset != b.replOffset {
		return a.replOffset > b.replOffset
	}
	if a.runID == "" || b.runID == "" {
		return a.runID != "" && b.runID == ""
	}
	return strings.ToLower(a.runID) < strings.ToLower(b.runID)
}
