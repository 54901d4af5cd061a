package repl

// Replication state in RDB files, as Redis 7 keeps it: an RDB written by a
// master with a backlog, or by a replica that has a master's history,
// carries repl-stream-db, repl-id and repl-offset aux fields
// (rdbPopulateSaveInfo). At start-up a master keeps the saved id as its
// replid2 (valid up to offset+1) so its replicas continue partially after
// a restart; a replica takes the id and offset as its own cached master.
// A master loading at start-up drops expired keys and feeds their DELs to
// the backlog, which then continues from the saved offset.

import "time"

// RDBAuxLocked returns the replication aux fields for an RDB opened now,
// or none when Redis would write none. streamDB is, on a replica, the
// database its master's stream selected last.
func (m *Master) RDBAuxLocked(streamDB int) [][2]string {
	var db int
	switch {
	case !m.linked && m.backlog != nil:
		db = max(m.lastDB, 0)
	case m.linked && (m.offset > 0 || m.backlog != nil):
		db = streamDB
	default:
		return nil
	}
	return AuxFields(db, m.replid, m.offset)
}

// RestoreLocked adopts the history a start-up load read (in; valid when
// the load succeeded and carried every field). A replica takes it as its
// cached master's and reports true; a master keeps the saved id as replid2
// (valid up to offset+1), and the DELs fed while loading follow the saved
// offset. A master that loaded no valid history drops the backlog it
// created for those DELs: it holds no one's data.
func (m *Master) RestoreLocked(in RDBInfo, valid, replica bool) bool {
	switch {
	case !valid:
		if !replica {
			m.backlog = nil
		}
		return false
	case replica:
		m.replid = in.ID
		m.offset = in.Offset
		m.CreateBacklogLocked()
		m.log.Info("Restored replication ID and offset from the RDB", "replid", in.ID, "offset", in.Offset)
		return true
	}
	m.replid2 = in.ID
	m.secondOffset = in.Offset + 1
	m.offset += in.Offset
	m.noReplicasAt = time.Now()
	m.log.Info("Restored replication ID and offset from the RDB as the secondary ID", "replid2", in.ID, "second_repl_offset", m.secondOffset)
	return false
}
