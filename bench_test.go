package redlock_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/benchkit"
)

// Micro-benchmarks of the hot paths on real local redis-server nodes. Run:
//
//	go test -run '^$' -bench . -benchmem
//
// The side-by-side comparison with other libraries is the bench/ tool.

func benchFactory(b *testing.B, nodes int, opts ...redlock.Option) *redlock.Factory {
	b.Helper()
	c := startBenchNodes(b, nodes)
	f, err := redlock.NewFactory(c, append([]redlock.Option{redlock.WithTTL(10 * time.Second), redlock.WithNodeTimeout(time.Second), redlock.WithAutoextend(false)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}

func startBenchNodes(b *testing.B, n int) []redlock.Pool {
	b.Helper()
	pools := make([]redlock.Pool, n)
	for i, u := range startURLs(b, n) {
		p, err := redlock.NewPool(u)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.Close() })
		pools[i] = p
	}
	return pools
}

// BenchmarkAcquireRelease is one uncontended lock+unlock cycle.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, nodes := range []int{3, 5} {
		for _, pipelining := range []bool{true, false} {
			b.Run(fmt.Sprintf("nodes=%d/pipelining=%v", nodes, pipelining), func(b *testing.B) {
				f := benchFactory(b, nodes, redlock.WithPipelining(pipelining))
				cycles(b, f.NewLock("bench"))
			})
		}
	}
}

// BenchmarkAcquireReleaseFenced is BenchmarkAcquireRelease's pipelined
// cycle with fencing tokens: the attempt is a script on every node instead
// of a bare SET NX PX, and commits its token in the same round when the
// nodes' clocks allow it (fence.go), so a cycle is still two rounds.
func BenchmarkAcquireReleaseFenced(b *testing.B) {
	for _, nodes := range []int{3, 5} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			f := benchFactory(b, nodes, redlock.WithFencing(true))
			cycles(b, f.NewLock("bench"))
		})
	}
}

// BenchmarkParallelDistinctKeys is many goroutines locking their own keys.
func BenchmarkParallelDistinctKeys(b *testing.B) {
	for _, pipelining := range []bool{true, false} {
		b.Run(fmt.Sprintf("pipelining=%v", pipelining), func(b *testing.B) {
			f := benchFactory(b, 3, redlock.WithPipelining(pipelining))
			var id atomic.Int64
			ctx := context.Background()
			b.SetParallelism(16)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				l := f.NewLock(fmt.Sprintf("key-%d", id.Add(1)))
				for pb.Next() {
					if _, err := l.Acquire(ctx); err != nil {
						b.Fatal(err)
					}
					if err := l.Release(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkExtend is one Extend of a held lock.
func BenchmarkExtend(b *testing.B) {
	f := benchFactory(b, 3)
	l := f.NewLock("extend")
	ctx := context.Background()
	if _, err := l.Acquire(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Extend(ctx); err != nil {
			b.Fatal(err)
		}
	}
	l.Release(ctx)
}

// noopObserver sets every hook to a function that does nothing: the cost
// of building and delivering the events, without a consumer.
var noopObserver = redlock.Observer{
	AcquireStart: func(ctx context.Context, _ string) context.Context { return ctx },
	AcquireDone:  func(context.Context, redlock.AcquireEvent) {},
	ReleaseStart: func(ctx context.Context, _ string) context.Context { return ctx },
	Released:     func(context.Context, redlock.ReleaseEvent) {},
	Extended:     func(redlock.ExtendEvent) {},
	Lost:         func(redlock.LossEvent) {},
	NodeError:    func(redlock.NodeErrorEvent) {},
	Waiting:      func(redlock.WaitingEvent) {},
	NodeReply:    func(context.Context, redlock.NodeReplyEvent) {},
}

// BenchmarkAcquireReleaseObserved is BenchmarkAcquireRelease on 3 pipelined
// nodes with no observer and with one whose hooks do nothing.
func BenchmarkAcquireReleaseObserved(b *testing.B) {
	for _, c := range []struct {
		name string
		opts []redlock.Option
	}{{"none", nil}, {"noop", []redlock.Option{redlock.WithObserver(noopObserver)}}} {
		b.Run("observer="+c.name, func(b *testing.B) {
			f := benchFactory(b, 3, c.opts...)
			cycles(b, f.NewLock("bench"))
		})
	}
}

// cycles acquires and releases l for as long as the benchmark runs.
func cycles(b *testing.B, l *redlock.Lock) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Acquire(ctx); err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// heldLocks is how many locks BenchmarkHeldLocks holds at once.
const heldLocks = 20000

// BenchmarkHeldLocks measures the live heap that held, autoextended locks
// cost the client (goal W7 of issue 15: at most 512 B per lock): it takes
// heldLocks locks made as the bench tool's W7 keepers are (TTL 30 s,
// autoextend, one factory over 3 nodes), forces a collection, and reports
// the live heap above the baseline taken before, per held lock, as B/lock.
// Heap bytes do not depend on the machine's load.
func BenchmarkHeldLocks(b *testing.B) {
	f := benchFactory(b, 3)
	ctx := context.Background()
	warm := f.NewLock("held:warm") // dial the connections first
	if _, err := warm.Acquire(ctx); err != nil {
		b.Fatal(err)
	}
	if err := warm.Release(ctx); err != nil {
		b.Fatal(err)
	}
	locks := make([]*redlock.Lock, heldLocks)
	names := make([]string, heldLocks)
	for i := range names {
		names[i] = fmt.Sprintf("held:%d", i)
	}
	var perLock float64
	for b.Loop() {
		before := liveHeap()
		for i, name := range names {
			locks[i] = f.NewLock(name, redlock.WithTTL(30*time.Second), redlock.WithAutoextend(true))
		}
		forEachLock(locks, func(l *redlock.Lock) {
			if _, err := l.Acquire(ctx); err != nil {
				b.Error(err)
			}
		})
		perLock = float64(liveHeap()-before) / heldLocks
		forEachLock(locks, func(l *redlock.Lock) {
			if err := l.Release(ctx); err != nil {
				b.Error(err)
			}
		})
		clear(locks)
	}
	b.ReportMetric(perLock, "B/lock")
}

// forEachLock calls fn for every lock from 64 goroutines, as the bench
// tool's keepers are taken.
func forEachLock(locks []*redlock.Lock, fn func(l *redlock.Lock)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(locks)); i = next.Add(1) - 1 {
				fn(locks[i])
			}
		})
	}
	wg.Wait()
}

// liveHeap is the heap that survives a collection.
func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkW2CycleCPU is the bench tool's W2 (benchkit.Standard: 64
// goroutines lock and unlock keys of their own on 3 nodes) in one process,
// for A/B runs of two builds: with the default options and over the
// pipelined floor, the same transport with no lock logic. Each iteration
// is one W2 run of w2Run of each, in turns (the lock first in even
// iterations, the floor first in odd ones), and measures the process's CPU
// (getrusage) per cycle of both. The nodes run on the same cores, so each
// figure moves with the machine's load; the ratio of the lock's to the
// floor's, taken from the two runs of one iteration, moves far less. It
// reports lock-µs/op and floor-µs/op over all runs, and ratio, the median
// of the iterations' ratios: compare it over interleaved runs of both
// builds (BENCHMARKS.md, steps 14 and 15).
func BenchmarkW2CycleCPU(b *testing.B) {
	pools := startBenchNodes(b, 3)
	w := standardWorkload(b, "W2")
	w.Duration = w2Run
	lock, err := benchkit.Ours("redlock", pools)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { lock.Close() })
	floor := benchkit.PipeFloor("floor-pipelined", pools)
	b.Cleanup(func() { floor.Close() })
	targets := []benchkit.Target{lock, floor}
	var sum [2]struct{ cpu, cycles float64 }
	var ratios []float64
	for i := 0; b.Loop(); i++ {
		var perCycle [2]float64
		for k := range 2 {
			j := (i + k) % 2 // 0: the lock, 1: the floor
			res, err := benchkit.Run(context.Background(), targets[j], w)
			if err != nil || res.Errors > 0 {
				b.Fatalf("W2 run: %v (%d failed cycles: %s)", err, res.Errors, res.FirstError)
			}
			perCycle[j] = res.ClientCPUSeconds / float64(res.Ops)
			sum[j].cpu, sum[j].cycles = sum[j].cpu+res.ClientCPUSeconds, sum[j].cycles+float64(res.Ops)
		}
		ratios = append(ratios, perCycle[0]/perCycle[1])
	}
	b.ReportMetric(sum[0].cpu*1e6/sum[0].cycles, "lock-µs/op")
	b.ReportMetric(sum[1].cpu*1e6/sum[1].cycles, "floor-µs/op")
	slices.Sort(ratios)
	n := len(ratios)
	b.ReportMetric((ratios[(n-1)/2]+ratios[n/2])/2, "ratio")
}

// w2Run is how long one W2 run of BenchmarkW2CycleCPU lasts: about
// 100,000 cycles on 2 cores.
const w2Run = 2 * time.Second

// standardWorkload returns the bench tool's workload id.
func standardWorkload(b *testing.B, id string) benchkit.Workload {
	for _, w := range benchkit.Standard(false) {
		if w.ID == id {
			return w
		}
	}
	b.Fatalf("no standard workload %s", id)
	return benchkit.Workload{}
}
