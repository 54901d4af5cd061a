package faults

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Table renders results as a Markdown table, one row per topology ×
// fault × setting: runs, acknowledged writes lost (sum over runs, and the
// acknowledged total), unknown outcomes, the unavailability window
// (smallest and largest over runs) and the linearizability verdicts.
func Table(results []Result) string {
	type cell struct {
		rs []Result
	}
	cells := map[string]*cell{}
	var keys []string
	for _, r := range results {
		k := r.Topology + "|" + r.Fault + "|" + r.Setting + "|" + fmt.Sprint(r.Replicas)
		if cells[k] == nil {
			cells[k] = &cell{}
			keys = append(keys, k)
		}
		cells[k].rs = append(cells[k].rs, r)
	}
	order := map[string]int{}
	for i, f := range Faults {
		order[f] = i
	}
	sort.SliceStable(keys, func(i, j int) bool {
		a, b := strings.Split(keys[i], "|"), strings.Split(keys[j], "|")
		if a[0] != b[0] {
			return a[0] > b[0] // sentinel before cluster
		}
		if a[1] != b[1] {
			return order[a[1]] < order[b[1]]
		}
		if a[2] != b[2] {
			return a[2] < b[2]
		}
		return a[3] < b[3]
	})
	var sb strings.Builder
	sb.WriteString("| topology | fault | setting | runs | lost / acknowledged | lost per run | unknown | unavailable (min–max) | linearizable |\n")
	sb.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range keys {
		c := cells[k]
		r0 := c.rs[0]
		var lost, acked, unknown, errs int
		var perRun []string
		var lo, hi int64 = -1, 0
		verdicts := map[string]int{}
		for _, r := range c.rs {
			if r.Err != "" {
				errs++
				continue
			}
			lost += r.Set.Lost
			acked += r.Set.Acked
			unknown += r.Set.Unknown
			perRun = append(perRun, fmt.Sprint(r.Set.Lost))
			if lo < 0 || r.Set.UnavailableNs < lo {
				lo = r.Set.UnavailableNs
			}
			if r.Set.UnavailableNs > hi {
				hi = r.Set.UnavailableNs
			}
			verdicts[r.Linearizable]++
		}
		var vs []string
		for _, v := range []string{"ok", "illegal", "unknown", "none"} {
			if verdicts[v] > 0 {
				vs = append(vs, fmt.Sprintf("%s %d", v, verdicts[v]))
			}
		}
		topo := r0.Topology
		if r0.Topology == "cluster" {
			topo = fmt.Sprintf("cluster 3×%d", r0.Replicas)
		}
		runs := fmt.Sprint(len(c.rs) - errs)
		if errs > 0 {
			runs += fmt.Sprintf(" (+%d failed)", errs)
		}
		unav := "–"
		if lo >= 0 {
			unav = fmt.Sprintf("%.1f–%.1f s", time.Duration(lo).Seconds(), time.Duration(hi).Seconds())
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %d / %d | %s | %d | %s | %s |\n",
			topo, r0.Fault, r0.Setting, runs, lost, acked, strings.Join(perRun, ", "), unknown, unav, strings.Join(vs, ", "))
	}
	return sb.String()
}
