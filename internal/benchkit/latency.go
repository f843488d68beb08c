package benchkit

import (
	"math"
	"slices"
	"time"
)

// Recorder collects latency samples. It is not safe for concurrent use:
// give each goroutine its own and Merge them.
type Recorder struct {
	samples []time.Duration
	sorted  bool
}

// NewRecorder returns a recorder with room for n samples.
func NewRecorder(n int) *Recorder {
	return &Recorder{samples: make([]time.Duration, 0, n)}
}

// Record adds one sample.
func (r *Recorder) Record(d time.Duration) {
	r.samples = append(r.samples, d)
	r.sorted = false
}

// Merge adds every sample of o.
func (r *Recorder) Merge(o *Recorder) {
	if o == nil {
		return
	}
	r.samples = append(r.samples, o.samples...)
	r.sorted = false
}

// Len returns the number of samples.
func (r *Recorder) Len() int {
	if r == nil {
		return 0
	}
	return len(r.samples)
}

// Quantile returns the q-quantile (0 <= q <= 1) of the samples by the
// nearest-rank method, or 0 without samples.
func (r *Recorder) Quantile(q float64) time.Duration {
	if r.Len() == 0 {
		return 0
	}
	r.sort()
	q = min(max(q, 0), 1)
	i := int(math.Ceil(q*float64(len(r.samples)))) - 1
	return r.samples[max(i, 0)]
}

func (r *Recorder) sort() {
	if !r.sorted {
		slices.Sort(r.samples)
		r.sorted = true
	}
}

// Summary returns the percentiles of the samples.
func (r *Recorder) Summary() Latency {
	if r.Len() == 0 {
		return Latency{}
	}
	var sum time.Duration
	for _, s := range r.samples {
		sum += s
	}
	return Latency{
		N:    len(r.samples),
		P50:  r.Quantile(0.50),
		P90:  r.Quantile(0.90),
		P99:  r.Quantile(0.99),
		Max:  r.Quantile(1),
		Mean: sum / time.Duration(len(r.samples)),
	}
}

// Latency summarises a set of latency samples.
type Latency struct {
	N    int           `json:"n"`
	P50  time.Duration `json:"p50_ns"`
	P90  time.Duration `json:"p90_ns"`
	P99  time.Duration `json:"p99_ns"`
	Max  time.Duration `json:"max_ns"`
	Mean time.Duration `json:"mean_ns"`
}

// Merge combines results of one target on one workload, such as the rounds
// of an interleaved run: counts and times add up and the percentiles are
// recomputed from the samples. Allocation figures are averaged weighted by
// Ops, Keep results are taken from the first result that has one, and
// Detect results and CPU times add up.
func Merge(rs ...Result) Result {
	if len(rs) == 0 {
		return Result{}
	}
	out := Result{Workload: rs[0].Workload, Target: rs[0].Target,
		CycleSamples: NewRecorder(0), AcquireSamples: NewRecorder(0)}
	var allocs, bytes float64
	for _, r := range rs {
		out.Ops += r.Ops
		out.Errors += r.Errors
		if out.FirstError == "" {
			out.FirstError = r.FirstError
		}
		out.Elapsed += r.Elapsed
		out.Overlaps += r.Overlaps
		out.ClientCPUSeconds += r.ClientCPUSeconds
		out.ServerCPUSeconds += r.ServerCPUSeconds
		out.ClientSyscalls += r.ClientSyscalls
		out.ServerEvents += r.ServerEvents
		out.CycleSamples.Merge(r.CycleSamples)
		out.AcquireSamples.Merge(r.AcquireSamples)
		allocs += r.AllocsPerOp * float64(r.Ops)
		bytes += r.BytesPerOp * float64(r.Ops)
		if out.Keep == nil {
			out.Keep = r.Keep
		}
		if r.Detect != nil {
			if out.Detect == nil {
				out.Detect = &DetectResult{MaxWait: r.Detect.MaxWait}
				out.DetectSamples = NewRecorder(0)
			}
			out.Detect.Samples += r.Detect.Samples
			out.Detect.Noticed += r.Detect.Noticed
			out.Detect.Missed += r.Detect.Missed
			out.Detect.MaxWait = max(out.Detect.MaxWait, r.Detect.MaxWait)
			out.DetectSamples.Merge(r.DetectSamples)
		}
	}
	if out.Detect != nil {
		out.Detect.Latency = out.DetectSamples.Summary()
	}
	if out.Elapsed > 0 {
		out.OpsPerSec = float64(out.Ops) / out.Elapsed.Seconds()
	}
	if out.Ops > 0 {
		out.AllocsPerOp = allocs / float64(out.Ops)
		out.BytesPerOp = bytes / float64(out.Ops)
	}
	out.Cycle = out.CycleSamples.Summary()
	out.Acquire = out.AcquireSamples.Summary()
	return out
}
