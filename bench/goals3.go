package main

import (
	"fmt"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"

	"github.com/redlockplus/redlock/internal/benchkit"
)

// Limits of the goals of issue 23 (performance, round 3).
const (
	maxNodeBytesPerLock = 120                  // S2: node memory per held lock per node
	maxCPUGrowth        = 12                   // S3: client CPU at 1M locks against 100k
	maxDetectP99Round3  = 5 * time.Millisecond // D1
	curveLocks          = 1_000_000            // S1 and the top of S3's curve
)

// round3Goals checks the goals of issue 23: the CPU per W2 cycle against
// rueidislock and redsync (E1-E3), medians of the rounds' ratios; W1's
// latency against the floor and with fencing (E4); the costs of held
// locks at a million (S1), of node memory (S2) and their growth from
// 100,000 to 1,000,000 locks (S3), from W7 workloads of those lock counts
// (-w7-locks); and the loss detection p99 (D1).
func (r *report) round3Goals() []check {
	var cs []check
	us := func(v float64) string { return fmt.Sprintf("%.1f µs", v) }
	ratio := func(goal, id, a, b, what string, limit float64, f func(benchkit.Result) float64) {
		if c, ok := r.ratioCheck(goal, id, a, b, id+" "+what, "<=", limit, f, us); ok {
			cs = append(cs, c)
		}
	}
	client := func(res benchkit.Result) float64 { return perCycleMicros(res.ClientCPUSeconds, res) }
	total := func(res benchkit.Result) float64 {
		return perCycleMicros(res.ClientCPUSeconds+res.ServerCPUSeconds, res)
	}
	p50 := func(res benchkit.Result) float64 { return float64(res.Cycle.P50) / 1e3 }
	ratio("E1", "W2", "redlock", anchor, "client CPU per cycle", 0.6, client)
	ratio("E2", "W2", "redlock", anchor, "client+nodes CPU per cycle", 1.0, total)
	ratio("E3", "W2", "redlock", "redsync", "client+nodes CPU per cycle", 0.25, total)
	ratio("E4", "W1-3", "redlock", "floor", "cycle p50", 1.1, p50)
	ratio("E4", "W1-3", "redlock-fenced", "redlock", "cycle p50", 1.15, p50)

	if k, ok := r.keepAt("redlock", curveLocks); ok {
		cs = append(cs, keepChecks("S1", "W7 ", k)...)
	}
	if k, ok := r.keepAt("redlock", 0); ok && k.NodeBytesPerLock > 0 {
		detail := fmt.Sprintf("%d locks, %.0f keys tracked per node", k.Locks, k.TrackedKeysPerNode)
		if off, ok := r.keepAt("redlock-untracked", k.Locks); ok && off.NodeBytesPerLock > 0 {
			detail += fmt.Sprintf("; without loss detection %.0f B, so it costs %.0f B", off.NodeBytesPerLock, k.NodeBytesPerLock-off.NodeBytesPerLock)
		}
		cs = append(cs, check{Goal: "S2", Metric: "W7 node memory per held lock per node redlock, bytes", Value: k.NodeBytesPerLock,
			Cmp: "<=", Limit: maxNodeBytesPerLock, Pass: k.NodeBytesPerLock <= maxNodeBytesPerLock, Detail: detail})
	}
	big, okBig := r.keepAt("redlock", curveLocks)
	small, okSmall := r.keepAt("redlock", curveLocks/10)
	if okBig && okSmall && small.SteadyCPUSeconds > 0 {
		g := big.SteadyCPUSeconds / small.SteadyCPUSeconds
		cs = append(cs, check{Goal: "S3", Metric: "W7 client CPU redlock, 1M locks / 100k", Value: g, Cmp: "<=", Limit: maxCPUGrowth,
			Pass: g <= maxCPUGrowth, Detail: fmt.Sprintf("%.2f vs %.2f CPU s, collections at their steady rate (as measured: %.2f vs %.2f CPU s, %d and %d collections)",
				big.SteadyCPUSeconds, small.SteadyCPUSeconds, big.CPUSeconds, small.CPUSeconds, big.GCCycles, small.GCCycles)})
	}
	if c, ok := r.detectCheck("D1", "W9 ", maxDetectP99Round3); ok {
		cs = append(cs, c)
	}
	return cs
}

// perCycleMicros is cpu seconds per operation of res, in µs; 0 without
// operations.
func perCycleMicros(cpu float64, res benchkit.Result) float64 {
	if res.Ops == 0 {
		return 0
	}
	return 1e6 * cpu / float64(res.Ops)
}

// keepAt returns target's result of a W7 workload that held locks locks,
// or of the W7 workload that held the most for locks 0.
func (r *report) keepAt(target string, locks int) (*benchkit.KeepResult, bool) {
	var best *benchkit.KeepResult
	for _, w := range r.Workloads {
		if w.Goal != "W7" {
			continue
		}
		for _, res := range w.Results {
			k := res.Keep
			if res.Target != target || k == nil {
				continue
			}
			if locks == 0 && (best == nil || k.Locks > best.Locks) || k.Locks == locks {
				best = k
			}
		}
	}
	return best, best != nil
}

// curvePlot draws the client CPU of the W7 workloads of one run against
// their lock counts (S3), with a line through the smallest count's point
// at the slope of linear growth; ok is false with fewer than two counts.
func curvePlot(r *report) (p *plot.Plot, ok bool, err error) {
	var pts plotter.XYs
	for _, w := range r.Workloads {
		if w.Goal != "W7" {
			continue
		}
		for _, res := range w.Results {
			if res.Target == "redlock" && res.Keep != nil && res.Keep.SteadyCPUSeconds > 0 {
				pts = append(pts, plotter.XY{X: float64(res.Keep.Locks), Y: res.Keep.SteadyCPUSeconds})
			}
		}
	}
	if len(pts) < 2 {
		return nil, false, nil
	}
	slices.SortFunc(pts, func(a, b plotter.XY) int { return int(a.X - b.X) })
	p = plot.New()
	// The machine on a line of its own: a long CPU model ran off both
	// sides of the chart on one line.
	p.Title.Text = fmt.Sprintf("W7: client CPU over the hold against held locks\n(redlock, %s)", r.Machine.CPUModel)
	p.X.Label.Text, p.Y.Label.Text = "locks held (log)", "client CPU seconds, steady GC (log)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	measured, points, err := plotter.NewLinePoints(pts)
	if err != nil {
		return nil, false, fmt.Errorf("bench: curve chart: %w", err)
	}
	measured.Color, points.Color = plotutil.Color(0), plotutil.Color(0)
	first := pts[0]
	linear := plotter.NewFunction(func(x float64) float64 { return first.Y * x / first.X })
	linear.Color, linear.Dashes = plotutil.Color(1), plotutil.Dashes(1)
	p.Add(measured, points, linear)
	p.Legend.Add("measured", measured, points)
	p.Legend.Add("linear from the smallest", linear)
	p.Legend.Top, p.Legend.Left = true, true
	return p, true, nil
}
