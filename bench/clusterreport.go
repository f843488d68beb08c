package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/redlockplus/redlock/internal/benchkit"
)

// infoRatio is a ratio of one run that has no goal: a figure to read, not
// a check to pass.
type infoRatio struct {
	Workload string  `json:"workload"`
	Metric   string  `json:"metric"`
	Value    float64 `json:"value"`
	Detail   string  `json:"detail"` // the two figures behind the ratio
}

// clusterRatios are what a Redis Cluster and WithReplicaAck(1) cost, on
// W1-3 and W2, each the median of the rounds' ratios: a cluster of 3
// masters against 3 independent nodes, a replica per master with
// WithReplicaAck(1) against none in the cluster, and the same on
// independent nodes (the WAIT without the cluster).
func (r *report) clusterRatios() []infoRatio {
	ms := func(v float64) string { return fmtMs(time.Duration(v)) }
	us := func(v float64) string { return fmt.Sprintf("%.1f µs", v) }
	rate := func(v float64) string { return fmt.Sprintf("%.0f/s", v) }
	p50 := func(res benchkit.Result) float64 { return float64(res.Cycle.P50) }
	ops := func(res benchkit.Result) float64 { return res.OpsPerSec }
	client := func(res benchkit.Result) float64 { return perCycleMicros(res.ClientCPUSeconds, res) }
	total := func(res benchkit.Result) float64 {
		return perCycleMicros(res.ClientCPUSeconds+res.ServerCPUSeconds, res)
	}
	var out []infoRatio
	for _, id := range []string{"W1-3", "W2"} {
		for _, pair := range [][2]string{
			{"redlock-cluster", "redlock"},
			{"redlock-cluster-ack", "redlock-cluster"},
			{"redlock-ack", "redlock"},
		} {
			for _, m := range []struct {
				what string
				f    func(benchkit.Result) float64
				unit func(float64) string
			}{
				{"cycle p50", p50, ms},
				{"ops/s", ops, rate},
				{"client CPU per cycle", client, us},
				{"client+nodes CPU per cycle", total, us},
			} {
				if m.what == "ops/s" && id != "W2" {
					continue // one goroutine: ops/s is 1/latency
				}
				// The limit and verdict of ratioCheck are not used.
				if c, ok := r.ratioCheck(id, id, pair[0], pair[1], m.what, "<=", 0, m.f, m.unit); ok {
					out = append(out, infoRatio{Workload: id, Metric: c.Metric, Value: c.Value, Detail: c.Detail})
				}
			}
		}
	}
	return out
}

// printRatios writes the ratios that have no goal.
func (r *report) printRatios(w io.Writer) {
	if len(r.Ratios) == 0 {
		return
	}
	fmt.Fprintln(w, "\nRedis Cluster and WithReplicaAck(1), informative (no goal): medians of the rounds' ratios. nodes CPU")
	fmt.Fprintln(w, "counts every server of a target, its replicas included (see the CPU table).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| workload | metric | measured |")
	fmt.Fprintln(w, "|---|---|--:|")
	for _, c := range r.Ratios {
		fmt.Fprintf(w, "| %s | %s | %s (%s) |\n", c.Workload, c.Metric, fmtNum(c.Value), c.Detail)
	}
}

// printOwnServers says, under the CPU table, whose figures the node
// columns of the targets on servers of their own are.
func (r *report) printOwnServers(w io.Writer) {
	var names []string
	for _, res := range r.allResults() {
		if _, ok := ownServers[res.Target]; ok && !slices.Contains(names, res.Target) {
			names = append(names, res.Target)
		}
	}
	if len(names) == 0 {
		return
	}
	fmt.Fprintln(w)
	for _, n := range names {
		fmt.Fprintf(w, "%s: servers and node reads+writes are those of %s, not the tool's nodes.\n", n, ownServers[n])
	}
}
