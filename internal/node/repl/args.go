package repl

// The argument grammars of the replication commands, with Redis's error
// texts.

import (
	"strconv"
	"strings"
	"time"

	"github.com/shardis/shardis/internal/node/value"
)

// PSyncArgs is PSYNC replid offset [FAILOVER].
type PSyncArgs struct {
	ReplID string
	Offset int64
	// Failover is set when the old master hands over (FAILOVER): this
	// replica promotes itself before it answers.
	Failover bool
}

// ParsePSync parses PSYNC's arguments (args[0] is the command name, at
// least three arguments); the error is Redis's reply.
func ParsePSync(args [][]byte) (PSyncArgs, string) {
	off, err := strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil {
		return PSyncArgs{}, ErrNotInt
	}
	a := PSyncArgs{ReplID: string(args[1]), Offset: off}
	if len(args) > 3 {
		if !strings.EqualFold(string(args[3]), "FAILOVER") || len(args) > 4 {
			return PSyncArgs{}, errSyntax
		}
		a.Failover = true
	}
	return a, ""
}

// ParseWait parses WAIT numreplicas timeout (args[0] is the command name,
// three arguments); the error is Redis's reply.
func ParseWait(args [][]byte) (want int64, timeout time.Duration, err string) {
	want, ok := value.ParseInt(args[1])
	if !ok {
		return 0, 0, ErrNotInt
	}
	ms, ok := value.ParseInt(args[2])
	if !ok {
		return 0, 0, "ERR timeout is not an integer or out of range"
	}
	if ms < 0 {
		return 0, 0, "ERR timeout is negative"
	}
	return want, time.Duration(ms) * time.Millisecond, ""
}

// ParseReplicaOf parses REPLICAOF host port | NO ONE (args[0] is the
// command name, three arguments): noOne, or the master's address; the
// error is Redis's reply.
func ParseReplicaOf(args [][]byte) (host string, port int, noOne bool, err string) {
	if strings.EqualFold(string(args[1]), "NO") && strings.EqualFold(string(args[2]), "ONE") {
		return "", 0, true, ""
	}
	p, ok := value.ParseInt(args[2])
	if !ok || p < 0 || p > 65535 {
		return "", 0, false, "ERR Invalid master port"
	}
	return string(args[1]), int(p), false, ""
}

// Populate is DEBUG POPULATE count [prefix] [size], the dataset filler of
// Redis's replication tests: keys prefix:0 .. prefix:count-1 holding
// value:N, zero-padded or cut to Size bytes when Size is not 0.
type Populate struct {
	Count  int64
	Prefix string
	Size   int64
}

// ParsePopulate parses DEBUG POPULATE's arguments (args[0] is DEBUG); the
// error is Redis's reply, or syntax is set for a wrong number of arguments
// (the caller answers DEBUG's own syntax error).
func ParsePopulate(args [][]byte) (p Populate, err string, syntax bool) {
	if len(args) < 3 || len(args) > 5 {
		return p, "", true
	}
	count, ok := value.ParseInt(args[2])
	if !ok {
		return p, ErrNotInt, false
	}
	if count < 0 {
		return p, "ERR count must be greater than or equal to 0", false
	}
	p = Populate{Count: count, Prefix: "key"}
	if len(args) > 3 {
		p.Prefix = string(args[3])
	}
	if len(args) > 4 {
		n, ok := value.ParseInt(args[4])
		if !ok || n < 0 {
			return Populate{}, ErrNotInt, false
		}
		p.Size = n
	}
	return p, "", false
}

// Key appends key j to dst[:0].
func (p Populate) Key(dst []byte, j int64) []byte {
	return strconv.AppendInt(append(append(dst[:0], p.Prefix...), ':'), j, 10)
}

// Value returns key j's value, a new slice.
func (p Populate) Value(j int64) []byte {
	var buf [32]byte
	v := strconv.AppendInt(append(buf[:0], "value:"...), j, 10)
	if p.Size == 0 {
		return append([]byte(nil), v...)
	}
	val := make([]byte, p.Size)
	copy(val, v)
	return val
}
