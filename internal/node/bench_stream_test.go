package node

import (
	"fmt"
	"testing"
)

// BenchmarkExecXAdd is XADD s * f v through the dispatcher.
func BenchmarkExecXAdd(b *testing.B) {
	benchExecute(b, nil, func(int) []string { return []string{"XADD", "s", "*", "f", "v"} })
}

// BenchmarkExecXReadGroupAck alternates XREADGROUP COUNT 10 and the XACK
// of what it read, on a stream refilled as it drains.
func BenchmarkExecXReadGroupAck(b *testing.B) {
	ts := startServer(b)
	setup := [][]string{{"XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"}}
	next := 1
	benchExecuteOn(b, ts, setup, func(i int) []string {
		switch i % 3 {
		case 0:
			args := []string{"XADD", "s", fmt.Sprintf("%d-0", next), "f", "v"}
			next++
			return args
		case 1:
			return []string{"XREADGROUP", "GROUP", "g", "c", "COUNT", "10", "STREAMS", "s", ">"}
		}
		return []string{"XACK", "s", "g", fmt.Sprintf("%d-0", next-1)}
	})
}
