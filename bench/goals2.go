package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/redlockplus/redlock/internal/benchkit"
)

// anchor is the target the round-2 ratios of issue 15 compare with:
// rueidislock with one key.
const anchor = "rueidislock"

// Limits of the goals of issue 15 that are not ratios.
const (
	maxCPUShare     = 0.05                  // W7: client CPU, share of one core
	maxHeapPerLock  = 512                   // W7: bytes of live heap per held lock
	maxDetectionP99 = 50 * time.Millisecond // W9: loss detection p99
)

// medianRatio returns the median over the rounds of workload id of
// f(a)/f(b), the rounds of a and b paired in order, and how many rounds
// gave a ratio. ok is false when either target was not measured.
func (r *report) medianRatio(id, a, b string, f func(benchkit.Result) float64) (median float64, rounds int, ok bool) {
	for _, w := range r.Workloads {
		if w.ID != id {
			continue
		}
		ra, rb := w.rounds[a], w.rounds[b]
		var ratios []float64
		for i := range min(len(ra), len(rb)) {
			if d := f(rb[i]); d > 0 {
				ratios = append(ratios, f(ra[i])/d)
			}
		}
		if len(ratios) == 0 {
			return 0, 0, false
		}
		slices.Sort(ratios)
		n := len(ratios)
		if n%2 == 1 {
			return ratios[n/2], n, true
		}
		return (ratios[n/2-1] + ratios[n/2]) / 2, n, true
	}
	return 0, 0, false
}

// round2Goals checks the goals of issue 15: this library (redlock, default
// options) against rueidislock with one key on W1 (3 nodes), W2 and W3, as
// the median of the rounds' ratios; the costs of 100,000 held locks (W7);
// the growth of the W1 cycle from 3 to 7 nodes (W8); and how soon a lost
// lock is noticed (W9).
func (r *report) round2Goals() []check {
	var cs []check
	ms := func(v float64) string { return fmtMs(time.Duration(v)) }
	rate := func(v float64) string { return fmt.Sprintf("%.0f/s", v) }
	ratio := func(id, a, b, what, cmp string, limit float64, f func(benchkit.Result) float64, unit func(float64) string) {
		if c, ok := r.ratioCheck(id, id, a, b, what, cmp, limit, f, unit); ok {
			cs = append(cs, c)
		}
	}
	p50 := func(res benchkit.Result) float64 { return float64(res.Cycle.P50) }
	ops := func(res benchkit.Result) float64 { return res.OpsPerSec }
	waitP99 := func(res benchkit.Result) float64 { return float64(res.Acquire.P99) }

	ratio("W1-3", "redlock", anchor, "cycle p50", "<=", 1.25, p50, ms)
	ratio("W2", "redlock", anchor, "ops/s", ">=", 1.8, ops, rate)
	ratio("W3", "redlock", anchor, "acquisitions/s", ">=", 1.2, ops, rate)
	ratio("W3", "redlock", anchor, "acquire wait p99", "<=", 0.25, waitP99, ms)

	if res, ok := r.result("W7", "redlock"); ok && res.Keep != nil {
		cs = append(cs, keepChecks("W7", "", res.Keep)...)
	}

	ratio("W8", "redlock-7n", "redlock-3n", "cycle p50", "<=", 1.3, p50, ms)

	if c, ok := r.detectCheck("W9", "", maxDetectionP99); ok {
		cs = append(cs, c)
	}
	return cs
}

// ratioCheck checks the median over the rounds of workload id of
// f(a)/f(b) against limit (cmp "<=" or ">="), as goal; the metric is what
// and the targets. ok is false when either target was not measured.
func (r *report) ratioCheck(goal, id, a, b, what, cmp string, limit float64, f func(benchkit.Result) float64, unit func(float64) string) (check, bool) {
	ra, okA := r.result(id, a)
	rb, okB := r.result(id, b)
	v, n, ok := r.medianRatio(id, a, b, f)
	if !okA || !okB || !ok {
		return check{}, false
	}
	pass := v <= limit
	if cmp == ">=" {
		pass = v >= limit
	}
	return check{Goal: goal, Metric: what + " " + a + "/" + b, Value: v, Cmp: cmp, Limit: limit, Pass: pass,
		Detail: fmt.Sprintf("%s vs %s over all rounds; median of %d round(s)", unit(f(ra)), unit(f(rb)), n)}, true
}

// keepChecks checks what keeping k's locks cost this library: none lost,
// the client's share of a core and its heap per lock, as goal, each
// metric after prefix.
func keepChecks(goal, prefix string, k *benchkit.KeepResult) []check {
	return []check{
		{Goal: goal, Metric: prefix + "locks lost redlock", Value: float64(k.Lost), Cmp: "==", Limit: 0,
			Pass:   k.Lost == 0 && k.Acquired == k.Locks,
			Detail: fmt.Sprintf("%d of %d acquired, held %.0f s", k.Acquired, k.Locks, k.Hold.Seconds())},
		{Goal: goal, Metric: prefix + "client CPU redlock, share of one core", Value: k.SteadyCPUFraction, Cmp: "<=",
			Limit: maxCPUShare, Pass: k.SteadyCPUFraction <= maxCPUShare,
			Detail: fmt.Sprintf("%.2f CPU s in %.1f s with %.2f collections at their steady rate (%d ran, %.2f CPU s each; %.2f CPU s as measured); %.0f commands/s at the nodes",
				k.SteadyCPUSeconds, k.Hold.Seconds(), k.SteadyGCs, k.GCCycles, k.GCCycleCPUSeconds, k.CPUSeconds, k.ProcessedPerSec)},
		{Goal: goal, Metric: prefix + "heap per held lock redlock, bytes", Value: k.HeapBytesPerLock, Cmp: "<=",
			Limit: maxHeapPerLock, Pass: k.HeapBytesPerLock <= maxHeapPerLock,
			Detail: fmt.Sprintf("%.1f MB for %d locks", k.HeapBytesPerLock*float64(k.Acquired)/1e6, k.Acquired)},
	}
}

// detectCheck checks W9's loss-detection p99 of redlock against limit, as
// goal, the metric after prefix; ok is false when W9 did not run.
func (r *report) detectCheck(goal, prefix string, limit time.Duration) (check, bool) {
	res, ok := r.result("W9", "redlock")
	if !ok || res.Detect == nil {
		return check{}, false
	}
	d := res.Detect
	return check{Goal: goal, Metric: prefix + "loss detected p99 redlock, ms", Value: float64(d.Latency.P99) / 1e6, Cmp: "<=",
		Limit: float64(limit) / 1e6, Pass: d.Samples > 0 && d.Latency.P99 <= limit,
		Detail: fmt.Sprintf("p50 %s ms; %d of %d not noticed within %v", fmtMs(d.Latency.P50), d.Missed, d.Samples, d.MaxWait)}, true
}

// printDetect writes the table of the Detect workloads.
func (r *report) printDetect(w io.Writer) {
	cols := []string{"samples", "noticed", "missed", "p50", "p90", "p99", "max", "bound"}
	r.printKindTables(w, "detect", cols, func(res benchkit.Result) (string, bool) {
		d := res.Detect
		if d == nil {
			return "", false
		}
		return fmt.Sprintf("%d | %d | %d | %s | %s | %s | %s | %s", d.Samples, d.Noticed, d.Missed,
			fmtMs(d.Latency.P50), fmtMs(d.Latency.P90), fmtMs(d.Latency.P99), fmtMs(d.Latency.Max), fmtMs(d.MaxWait)), true
	}, func(workloadReport) {
		fmt.Fprintln(w, "\nms from the last key of a quorum deleted (even samples) or overwritten with another token (odd samples),")
		fmt.Fprintln(w, "by a raw client, to the holder's Done closed. A lock not noticed lost within the bound is a miss and counts as the bound.")
	})
}
