package persist

// The decisions of SAVE, BGSAVE and the MISCONF refusal, with Redis's
// texts; the node replies them.

// errBgsaveInProgress is SAVE's and BGSAVE's reply while one runs.
const errBgsaveInProgress = "ERR Background save already in progress"

// SaveCommand is SAVE, the caller holding every shard lock: the error text to
// reply, "" once the RDB file is written.
func (p *Persistence) SaveCommand() string {
	if p.BgsaveInProgress() {
		return errBgsaveInProgress
	}
	if err := p.SaveHeld(); err != nil {
		return "ERR " + err.Error()
	}
	return ""
}

// BgsaveCommand is BGSAVE [SCHEDULE] (schedule), the caller holding every shard
// lock (copyAll as for BgsaveLocked): the status to reply, or the error
// text.
func (p *Persistence) BgsaveCommand(schedule, copyAll bool) (status, errText string) {
	busy := ""
	switch {
	case p.BgsaveInProgress():
		busy = errBgsaveInProgress
	case p.AOF().Rewriting():
		busy = "ERR An AOF log rewriting in progress: can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible."
	}
	if busy != "" {
		if schedule {
			p.ScheduleBgsave()
			return "Background saving scheduled", ""
		}
		return "", busy
	}
	if !p.BgsaveLocked(copyAll) {
		return "", errBgsaveInProgress
	}
	return "Background saving started", ""
}

// Refusal is Redis's MISCONF: with stop-writes-on-bgsave-error and save
// rules (stopWrites), writes are refused after a failed background save;
// with the AOF on, after a failed AOF write. "" when writes are allowed.
func (p *Persistence) Refusal(stopWrites bool) string {
	if !p.LastBgsaveOK() && stopWrites {
		return "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error."
	}
	if e := p.AOF().LastWriteError(); e != "" && p.AOF().Enabled() {
		return "MISCONF Errors writing to the AOF file: " + e
	}
	return ""
}
