package faults

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// Outcome says what a client knows about one operation.
type Outcome string

const (
	// OK means the server replied with a result: the operation happened.
	OK Outcome = "ok"
	// Fail means the operation certainly did not happen: the server
	// refused it before running it, or it was never sent.
	Fail Outcome = "fail"
	// Unknown means the operation may or may not have happened: a
	// timeout, a broken connection, or an UNACKED reply (applied on the
	// master, not acknowledged by enough replicas).
	Unknown Outcome = "unknown"
)

// Op is one operation of a history, written by a worker as one JSON line.
type Op struct {
	// Proc identifies the client goroutine ("<worker>/<n>"); its
	// operations never overlap.
	Proc string `json:"p"`
	// F is the operation: "sadd" (set workload), "get", "set" or "incr"
	// (register workload).
	F string `json:"f"`
	// Key is the key operated on.
	Key string `json:"k"`
	// Value is the element added (sadd) or the value written (set).
	Value int64 `json:"v,omitempty"`
	// Out is the value read (get, with a missing key read as 0) or the
	// value returned (incr).
	Out int64 `json:"o,omitempty"`
	// Outcome classifies the reply.
	Outcome Outcome `json:"r"`
	// Err is the error text when Outcome is not OK.
	Err string `json:"e,omitempty"`
	// Call and Return are the invocation and completion times, unix
	// nanoseconds (every namespace shares the host's clock).
	Call   int64 `json:"t0"`
	Return int64 `json:"t1"`
}

// Classify maps a client error to an outcome. A nil error is OK. Errors a
// server sends before running a command (READONLY, NOREPLICAS, NOQUORUM,
// CLUSTERDOWN, MASTERDOWN, TRYAGAIN, LOADING, MOVED, ASK, CROSSSLOT) and
// failures to connect or to get a pooled connection are Fail; anything
// else (timeouts, resets, UNACKED) is Unknown. It is right only for a
// client that sends each command once: after a retry, the last error
// (say a refused dial) hides an earlier attempt that may have been
// applied, so the workers' clients never retry nor follow redirects.
func Classify(err error) Outcome {
	if err == nil {
		return OK
	}
	s := err.Error()
	for _, p := range []string{"READONLY", "NOREPLICAS", "NOQUORUM", "CLUSTERDOWN", "MASTERDOWN", "TRYAGAIN", "LOADING", "MOVED", "ASK ", "CROSSSLOT", "NOAUTH"} {
		if strings.HasPrefix(s, p) {
			return Fail
		}
	}
	for _, p := range []string{"connect: connection refused", "connect: no route to host", "redis: connection pool timeout", "redis: client is closed", "shardedpool: ", "cluster: no master"} {
		if strings.Contains(s, p) {
			return Fail
		}
	}
	if strings.HasPrefix(s, "dial tcp") {
		return Fail
	}
	return Unknown
}

// ReadHistory reads JSON lines of Ops.
func ReadHistory(r io.Reader) ([]Op, error) {
	var ops []Op
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var op Op
		if err := json.Unmarshal(line, &op); err != nil {
			return nil, fmt.Errorf("faults: history line %q: %w", line, err)
		}
		ops = append(ops, op)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("faults: read history: %w", err)
	}
	return ops, nil
}

// Merge joins worker histories and sorts them by invocation time.
func Merge(hs ...[]Op) []Op {
	var all []Op
	for _, h := range hs {
		all = append(all, h...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Call < all[j].Call })
	return all
}

// SetResult is the verdict of Jepsen's set workload.
type SetResult struct {
	// Attempted counts the SADDs issued.
	Attempted int `json:"attempted"`
	// Acked counts the SADDs the server acknowledged.
	Acked int `json:"acked"`
	// Lost counts acknowledged elements missing from the final read.
	Lost int `json:"lost"`
	// Unknown counts SADDs with an unknown outcome; Recovered those of
	// them present in the final read.
	Unknown   int `json:"unknown"`
	Recovered int `json:"recovered"`
	// Failed counts SADDs that certainly did not happen; Unexpected those
	// of them (or elements never written) present in the final read,
	// which would be a bug.
	Failed     int `json:"failed"`
	Unexpected int `json:"unexpected"`
	// UnavailableNs is the unavailability window: the longest time,
	// within [from, to], during which one worker got no SADD on one key
	// acknowledged (the largest over workers and keys, so that a cluster
	// master's outage shows although the other masters keep serving),
	// nanoseconds.
	UnavailableNs int64 `json:"unavailable_ns"`
	// LostSample lists up to 10 lost elements, for the log.
	LostSample []string `json:"lost_sample,omitempty"`
}

// CheckSet compares a history's SADDs with the final content of the sets
// (key -> members). The unavailability window is measured over [from, to]
// (unix ns; from is usually the fault's start, to the end of the
// workload).
func CheckSet(ops []Op, final map[string][]int64, from, to int64) SetResult {
	present := map[string]map[int64]bool{}
	for k, ms := range final {
		m := map[int64]bool{}
		for _, v := range ms {
			m[v] = true
		}
		present[k] = m
	}
	var r SetResult
	written := map[string]map[int64]bool{}
	acks := map[string][]int64{} // worker and key -> acknowledgement times
	for _, op := range ops {
		if op.F != "sadd" {
			continue
		}
		r.Attempted++
		if written[op.Key] == nil {
			written[op.Key] = map[int64]bool{}
		}
		written[op.Key][op.Value] = true
		in := present[op.Key][op.Value]
		switch op.Outcome {
		case OK:
			r.Acked++
			w, _, _ := strings.Cut(op.Proc, "/")
			acks[w+" "+op.Key] = append(acks[w+" "+op.Key], op.Return)
			if !in {
				r.Lost++
				if len(r.LostSample) < 10 {
					r.LostSample = append(r.LostSample, fmt.Sprintf("%s:%d", op.Key, op.Value))
				}
			}
		case Unknown:
			r.Unknown++
			if in {
				r.Recovered++
			}
		default:
			r.Failed++
			if in {
				r.Unexpected++
			}
		}
	}
	for k, m := range present {
		for v := range m {
			if !written[k][v] {
				r.Unexpected++
			}
		}
	}
	for _, ts := range acks {
		r.UnavailableNs = max(r.UnavailableNs, longestGap(ts, from, to))
	}
	return r
}

// longestGap returns the longest interval within [from, to] that holds
// none of the times ts.
func longestGap(ts []int64, from, to int64) int64 {
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	prev, gap := from, int64(0)
	for _, t := range ts {
		if t < from || t > to {
			continue
		}
		if t-prev > gap {
			gap = t - prev
		}
		prev = t
	}
	if to-prev > gap {
		gap = to - prev
	}
	return gap
}

// infinity is the return time of an operation whose outcome is unknown: it
// may take effect at any point after its call.
const infinity = math.MaxInt64
