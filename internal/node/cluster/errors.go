package cluster

import (
	"errors"
	"fmt"
)

// Error is an operator error whose text is Redis's reply, without the
// leading '-' ("ERR Slot 5 is already busy"). The node layer writes
// Error() as the error reply.
type Error struct {
	Text string
}

// Error returns the reply text.
func (e *Error) Error() string { return e.Text }

func errf(format string, args ...any) error {
	return &Error{Text: fmt.Sprintf(format, args...)}
}

// ErrCorruptConfig is returned by LoadNodesConf for a file Redis would
// refuse ("Unrecoverable error: corrupted cluster config file."); the
// returned error wraps it with the offending line.
var ErrCorruptConfig = errors.New("cluster: corrupted cluster config file")

// Operator error texts of Redis 7.0's cluster.c.
var (
	errInvalidSlot      = &Error{"ERR Invalid or out of range slot"}
	errForgetMyself     = &Error{"ERR I tried hard but I can't forget myself..."}
	errForgetMaster     = &Error{"ERR Can't forget my master!"}
	errReplicateMyself  = &Error{"ERR Can't replicate myself"}
	errReplicateReplica = &Error{"ERR I can only replicate a master, not a replica."}
	errReplicateBusy    = &Error{"ERR To set a master the node must be empty and without assigned slots."}
	errNotAMaster       = &Error{"ERR The specified node is not a master"}
	errSetSlotReplica   = &Error{"ERR Please use SETSLOT only with masters."}
	errTargetNotMaster  = &Error{"ERR Target node is not a master"}
	errFlushSlotsKeys   = &Error{"ERR DB must be empty to perform CLUSTER FLUSHSLOTS."}
	errResetKeys        = &Error{"ERR CLUSTER RESET can't be called with master nodes containing keys"}
	errEpochKnowsNodes  = &Error{"ERR The user can assign a config epoch only when the node does not know any other node."}
	errEpochNonZero     = &Error{"ERR Node config epoch is already non-zero"}
	errSetSlotSyntax    = &Error{"ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP"}
)
