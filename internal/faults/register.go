package faults

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
)

// regInput is a register operation's input.
type regInput struct {
	f     string // "get", "set" or "incr"
	value int64  // the value written by set
}

// regOutput is a register operation's output.
type regOutput struct {
	value   int64 // the value read by get, returned by incr
	unknown bool  // the outcome is unknown: any output is allowed
}

// RegisterModel is the porcupine model of one integer register per key:
// GET reads it (a missing key reads 0), SET writes it, INCR adds one and
// returns the new value. An operation with an unknown outcome may take
// effect or not; porcupine explores both because its return time is
// infinite and its output matches anything.
var RegisterModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Metadata.(string)
			if byKey[k] == nil {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() interface{} { return int64(0) },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		s := state.(int64)
		in := input.(regInput)
		out := output.(regOutput)
		switch in.f {
		case "get":
			return out.unknown || out.value == s, s
		case "set":
			return true, in.value
		case "incr":
			return out.unknown || out.value == s+1, s + 1
		}
		return false, s
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(regInput), output.(regOutput)
		res := fmt.Sprint(out.value)
		if out.unknown {
			res = "?"
		}
		switch in.f {
		case "set":
			return fmt.Sprintf("set(%d)", in.value)
		default:
			return fmt.Sprintf("%s() -> %s", in.f, res)
		}
	},
}

// RegisterOps turns a history's register operations into porcupine
// operations. Reads that failed or timed out are dropped (they change
// nothing); writes that certainly failed are dropped; writes with an
// unknown outcome get an infinite return time.
func RegisterOps(ops []Op) []porcupine.Operation {
	procs := map[string]int{}
	var out []porcupine.Operation
	for _, op := range ops {
		if op.F != "get" && op.F != "set" && op.F != "incr" {
			continue
		}
		if op.Outcome == Fail || (op.F == "get" && op.Outcome != OK) {
			continue
		}
		id, ok := procs[op.Proc]
		if !ok {
			id = len(procs)
			procs[op.Proc] = id
		}
		p := porcupine.Operation{
			ClientId: id,
			Input:    regInput{f: op.F, value: op.Value},
			Call:     op.Call,
			Output:   regOutput{value: op.Out},
			Return:   op.Return,
			Metadata: op.Key,
		}
		if op.Outcome == Unknown {
			p.Output = regOutput{unknown: true}
			p.Return = infinity
		}
		out = append(out, p)
	}
	return out
}

// Linearizable checks the register operations of a history with porcupine
// and returns "ok", "illegal", "unknown" (the search timed out) or "none"
// (no register operations). When the history is illegal and vizPath is
// not empty, porcupine's visualization of it is written there.
func Linearizable(ops []Op, timeout time.Duration, vizPath string) string {
	h := RegisterOps(ops)
	if len(h) == 0 {
		return "none"
	}
	res, info := porcupine.CheckOperationsVerbose(RegisterModel, h, timeout)
	if res == porcupine.Illegal && vizPath != "" {
		_ = porcupine.VisualizePath(RegisterModel, info, vizPath)
	}
	switch res {
	case porcupine.Ok:
		return "ok"
	case porcupine.Illegal:
		return "illegal"
	default:
		return "unknown"
	}
}
