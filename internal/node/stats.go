package node

import (
	"sync/atomic"

	"github.com/shardis/shardis/internal/node/info"
)

// serverStats are the counters INFO stats reports.
type serverStats struct {
	connectionsReceived atomic.Int64
	rejectedConnections atomic.Int64
	commands            atomic.Int64
	netInput            atomic.Int64
	netOutput           atomic.Int64
	expiredKeys         atomic.Int64
	evictedKeys         atomic.Int64
	keyspaceHits        atomic.Int64
	keyspaceMisses      atomic.Int64
	errorReplies        atomic.Int64
	expireCycleCPU      atomic.Int64
	// readsGone and writesGone are the read and write system calls of
	// closed clients (the connected ones keep their own counts, netio.Conn).
	readsGone  atomic.Int64
	writesGone atomic.Int64

	// errs counts the error replies by code (INFO errorstats).
	errs info.ErrorStats
}

// countError counts an error reply by its code (the first word), for INFO
// errorstats.
func (st *serverStats) countError(msg string) {
	st.errorReplies.Add(1)
	st.errs.Count(msg)
}

func (st *serverStats) reset() {
	st.connectionsReceived.Store(0)
	st.rejectedConnections.Store(0)
	st.commands.Store(0)
	st.netInput.Store(0)
	st.netOutput.Store(0)
	st.expiredKeys.Store(0)
	st.evictedKeys.Store(0)
	st.keyspaceHits.Store(0)
	st.keyspaceMisses.Store(0)
	st.errorReplies.Store(0)
	st.errs.Reset()
}

// cmdStats are a command's INFO commandstats counters.
type cmdStats struct {
	calls    atomic.Int64
	usec     atomic.Int64
	failed   atomic.Int64
	rejected atomic.Int64
}

func (cs *cmdStats) reset() {
	cs.calls.Store(0)
	cs.usec.Store(0)
	cs.failed.Store(0)
	cs.rejected.Store(0)
}
