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

// BenchmarkExecGeoSearch is scripts/bench-streams.sh's GEOSEARCH: 20 km
// around 15,40 on 100,000 members spread over 10x10 degrees (about 130
// found), through the dispatcher.
func BenchmarkExecGeoSearch(b *testing.B) {
	var setup [][]string
	rng := uint64(1)
	next := func() float64 {
		rng = rng*6364136223846793005 + 1442695040888963407
		return float64(rng>>11) / (1 << 53)
	}
	for i := 0; i < 100000; i += 1000 {
		req := []string{"GEOADD", "g"}
		for j := i; j < i+1000; j++ {
			req = append(req, fmt.Sprint(10+10*next()), fmt.Sprint(35+10*next()), fmt.Sprint("m", j))
		}
		setup = append(setup, req)
	}
	benchExecute(b, setup, func(int) []string {
		return []string{"GEOSEARCH", "g", "FROMLONLAT", "15", "40", "BYRADIUS", "20", "km", "ASC"}
	})
}

// BenchmarkExecPFAdd is scripts/bench-streams.sh's PFADD: one random
// element of a million into one dense HyperLogLog, through the dispatcher.
func BenchmarkExecPFAdd(b *testing.B) {
	benchExecute(b, [][]string{{"PFADD", "h"}, {"PFDEBUG", "TODENSE", "h"}}, func(i int) []string {
		return []string{"PFADD", "h", fmt.Sprintf("%012d", (i*7919)%1000000)}
	})
}
