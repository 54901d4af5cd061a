package repl

import "strconv"

// RDBInfo is what an RDB's aux fields say of replication, as Redis 7
// writes them (rdbPopulateSaveInfo): the stream's database, the
// replication id and the offset the snapshot was taken at.
type RDBInfo struct {
	ID       string
	Offset   int64 // -1 until read
	StreamDB int   // -1 until read
	HasID    bool
}

// NewRDBInfo returns an RDBInfo with nothing read yet.
func NewRDBInfo() RDBInfo { return RDBInfo{Offset: -1, StreamDB: -1} }

// Aux records one aux field of a load; fields other than repl-id,
// repl-offset and repl-stream-db, and malformed values, are ignored.
func (in *RDBInfo) Aux(key, val []byte) {
	switch string(key) {
	case "repl-id":
		if len(val) == 40 {
			in.ID, in.HasID = string(val), true
		}
	case "repl-offset":
		if n, err := strconv.ParseInt(string(val), 10, 64); err == nil {
			in.Offset = n
		}
	case "repl-stream-db":
		if n, err := strconv.Atoi(string(val)); err == nil {
			in.StreamDB = n
		}
	}
}

// Complete reports whether all three fields were read: only then does a
// restarted node continue the saved history.
func (in RDBInfo) Complete() bool { return in.HasID && in.Offset != -1 && in.StreamDB != -1 }

// AuxFields are the aux fields a snapshot carries for the history replid
// at offset, the stream being in database db.
func AuxFields(db int, replid string, offset int64) [][2]string {
	return [][2]string{
		{"repl-stream-db", strconv.Itoa(db)},
		{"repl-id", replid},
		{"repl-offset", strconv.FormatInt(offset, 10)},
	}
}
