package main

import (
	"context"
	"testing"
	"time"

	"github.com/redlockplus/redlock/internal/benchkit"
)

// TestRueidislockDetects breaks rueidislock's locks as W9 does, with one
// key and with a majority of three: its context must be cancelled for
// every lock (the bound is far beyond any delay), and the keys that
// LossKeys names must exist (a missing one is counted as an error).
func TestRueidislockDetects(t *testing.T) {
	ctx := context.Background()
	nodes, err := startNodes(ctx, "redis-server", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer stopNodes(nodes)
	addrs := []string{nodes[0].addr}
	raw, err := newPools(addrs)
	if err != nil {
		t.Fatal(err)
	}
	defer closePools(raw)
	w := benchkit.Workload{ID: "W9", Kind: benchkit.Detect, Ops: 4, TTL: time.Minute,
		Hold: 10 * time.Millisecond, MaxWait: 30 * time.Second, Nodes: lockPools(raw)}
	for _, tc := range []struct {
		name     string
		majority int32
		keys     int
	}{{"rueidislock", 1, 1}, {"rueidislock-default", 0, 2}} {
		tg, err := rueidislockBuilder(tc.name, tc.majority)(addrs, nil, w)
		if err != nil {
			t.Fatal(err)
		}
		wt := tg.(benchkit.WatchTarget)
		if got := wt.LossKeys("k"); len(got) != tc.keys {
			t.Errorf("%s: loss keys %v, want %d", tc.name, got, tc.keys)
		}
		if _, err := wt.NewWatcher("k", time.Second); err == nil {
			t.Errorf("%s: a watcher of another TTL than the locker's", tc.name)
		}
		res, err := benchkit.Run(ctx, tg, w)
		if cerr := tg.Close(); cerr != nil {
			t.Error(cerr)
		}
		if err != nil {
			t.Fatal(err)
		}
		if d := res.Detect; d == nil || d.Noticed != 4 || d.Missed != 0 || res.Errors != 0 {
			t.Errorf("%s: detect result %+v, errors %d (first %q)", tc.name, d, res.Errors, res.FirstError)
		}
	}
}

func TestMedianRatio(t *testing.T) {
	ops := func(vs ...float64) []benchkit.Result {
		out := make([]benchkit.Result, len(vs))
		for i, v := range vs {
			out[i] = benchkit.Result{OpsPerSec: v}
		}
		return out
	}
	f := func(res benchkit.Result) float64 { return res.OpsPerSec }
	for _, tc := range []struct {
		a, b   []benchkit.Result
		want   float64
		rounds int
	}{
		{ops(2, 30, 4), ops(1, 10, 1), 3, 3},        // ratios 2, 3, 4
		{ops(1, 2, 3, 40), ops(1, 1, 1, 1), 2.5, 4}, // 1, 2, 3, 40
		{ops(5, 6), ops(0, 2), 3, 1},                // a round without b is left out
	} {
		r := &report{Workloads: []workloadReport{{ID: "W2", rounds: map[string][]benchkit.Result{"a": tc.a, "b": tc.b}}}}
		got, n, ok := r.medianRatio("W2", "a", "b", f)
		if !ok || got != tc.want || n != tc.rounds {
			t.Errorf("median of %v / %v: %v over %d rounds (ok %v), want %v over %d", tc.a, tc.b, got, n, ok, tc.want, tc.rounds)
		}
	}
	r := &report{Workloads: []workloadReport{{ID: "W2"}}}
	if _, _, ok := r.medianRatio("W2", "a", "b", f); ok {
		t.Error("a median ratio of targets not measured")
	}
}
