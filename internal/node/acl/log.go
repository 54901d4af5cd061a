package acl

// Contexts of an ACL LOG entry.
const (
	CtxToplevel = "toplevel"
	CtxMulti    = "multi"
	CtxLua      = "lua"
)

// groupingWindow is how close in time (ms) two similar refusals must be
// to share one entry (Redis's ACL_LOG_GROUPING_MAX_TIME_DELTA).
const groupingWindow = 60000

// LogEntry is one ACL LOG entry.
type LogEntry struct {
	Count      int64
	Reason     string // "command", "key", "channel", "auth"
	Context    string // CtxToplevel, CtxMulti, CtxLua
	Object     string // the command, key, channel, or "AUTH"
	Username   string
	CTime      int64  // ms of the last occurrence
	ClientInfo string // CLIENT LIST line of the last client
}

// ReasonName is the reason ACL LOG prints for a result.
func ReasonName(res Result) string {
	switch res {
	case DeniedCmd:
		return "command"
	case DeniedKey:
		return "key"
	case DeniedChannel:
		return "channel"
	case DeniedAuth:
		return "auth"
	}
	return "unknown"
}

// Log is the ACL LOG: newest first, similar entries grouped.
type Log struct {
	entries []*LogEntry
}

// Add records a refusal at time now (ms), grouping it with a similar
// entry among the 10 newest (same reason, context, object and user,
// within a minute), and trims the log to maxLen entries.
func (l *Log) Add(e LogEntry, now int64, maxLen int) {
	e.Count, e.CTime = 1, now
	for i := 0; i < len(l.entries) && i < 10; i++ {
		c := l.entries[i]
		d := c.CTime - now
		if d < 0 {
			d = -d
		}
		if c.Reason == e.Reason && c.Context == e.Context && d <= groupingWindow && c.Object == e.Object && c.Username == e.Username {
			c.ClientInfo, c.CTime = e.ClientInfo, now
			c.Count++
			copy(l.entries[1:i+1], l.entries[:i])
			l.entries[0] = c
			return
		}
	}
	l.entries = append([]*LogEntry{&e}, l.entries...)
	if maxLen < 0 {
		maxLen = 0
	}
	if len(l.entries) > maxLen {
		l.entries = l.entries[:maxLen]
	}
}

// Entries returns up to n entries, newest first.
func (l *Log) Entries(n int) []LogEntry {
	n = min(max(n, 0), len(l.entries))
	out := make([]LogEntry, n)
	for i := range out {
		out[i] = *l.entries[i]
	}
	return out
}

// Reset empties the log.
func (l *Log) Reset() { l.entries = nil }

// Trim drops entries beyond maxLen (acllog-max-len lowered).
func (l *Log) Trim(maxLen int) {
	if len(l.entries) > maxLen {
		l.entries = l.entries[:max(maxLen, 0)]
	}
}

// GenPass renders random bytes as ACL GENPASS's hex password of bits bits
// (rand must hold at least (bits+7)/8 bytes).
func GenPass(rand []byte, bits int) string {
	const hexd = "0123456789abcdef"
	chars := (bits + 3) / 4
	out := make([]byte, chars)
	for i := range out {
		b := rand[i/2]
		if i%2 == 0 {
			out[i] = hexd[b>>4]
		} else {
			out[i] = hexd[b&15]
		}
	}
	return string(out)
}
