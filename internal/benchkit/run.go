package benchkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// goroutineStats is what one goroutine of a Cycle run measured.
type goroutineStats struct {
	cycle, acquire *Recorder
	ops, errs      int64
	first          error
}

func (s *goroutineStats) fail(err error) {
	s.errs++
	if s.first == nil {
		s.first = err
	}
}

// runCycle runs w.Goroutines cycle loops for w.Duration.
func runCycle(ctx context.Context, t Target, w Workload) (Result, error) {
	res := Result{Workload: w.ID, Target: t.Name()}
	g := max(w.Goroutines, 1)
	lockers := make([]Locker, g)
	for i := range lockers {
		key := w.KeyPrefix + "key"
		if !w.SharedKey {
			key += strconv.Itoa(i)
		}
		l, err := t.NewLocker(key)
		if err != nil {
			return res, fmt.Errorf("benchkit: %s: new locker: %w", t.Name(), err)
		}
		lockers[i] = l
	}
	runCtx, cancel := context.WithTimeout(ctx, w.Duration)
	defer cancel()
	var chk OverlapChecker
	stats := make([]goroutineStats, g)
	var wg sync.WaitGroup
	srv0 := readServerStats(ctx, w.Nodes)
	cpu0, sys0 := cpuSeconds(), clientSyscalls()
	start := time.Now()
	for i := range g {
		wg.Go(func() { stats[i] = cycleLoop(runCtx, lockers[i], w, &chk) })
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	res.ClientCPUSeconds, res.ClientSyscalls = cpuSeconds()-cpu0, clientSyscalls()-sys0
	if srv1 := readServerStats(ctx, w.Nodes); srv0.read == len(w.Nodes) && srv1.read == len(w.Nodes) {
		res.ServerCPUSeconds = srv1.cpu - srv0.cpu
		res.ServerEvents = srv1.events - srv0.events
	}
	res.CycleSamples, res.AcquireSamples = NewRecorder(0), NewRecorder(0)
	for _, s := range stats {
		res.Ops += s.ops
		res.Errors += s.errs
		if s.first != nil && res.FirstError == "" {
			res.FirstError = s.first.Error()
		}
		res.CycleSamples.Merge(s.cycle)
		res.AcquireSamples.Merge(s.acquire)
	}
	res.Overlaps = chk.Overlaps()
	res.OpsPerSec = float64(res.Ops) / res.Elapsed.Seconds()
	res.Cycle = res.CycleSamples.Summary()
	res.Acquire = res.AcquireSamples.Summary()
	return res, ctx.Err()
}

// cycleLoop is one goroutine of a Cycle run: ask, hold, release, think,
// until ctx ends. A failed Lock call is retried at once and its time counts
// in the acquire wait.
func cycleLoop(ctx context.Context, l Locker, w Workload, chk *OverlapChecker) goroutineStats {
	s := goroutineStats{cycle: NewRecorder(1024), acquire: NewRecorder(1024)}
	unlockCtx := context.WithoutCancel(ctx) // the last release must complete
	deadline, hasDeadline := ctx.Deadline()
	over := func() bool {
		// A command may fail at the deadline a moment before ctx.Err is set.
		return ctx.Err() != nil || hasDeadline && !time.Now().Before(deadline)
	}
	for !over() {
		ask := time.Now()
		var call time.Time
		var err error
		for {
			call = time.Now()
			if err = l.Lock(ctx); err == nil || over() {
				break
			}
			s.fail(err)
		}
		if err != nil {
			break // the run is over
		}
		got := time.Now()
		if w.CheckOverlap {
			chk.Enter()
		}
		if w.Hold > 0 {
			time.Sleep(w.Hold)
		}
		if w.CheckOverlap {
			chk.Exit()
		}
		err = l.Unlock(unlockCtx)
		end := time.Now()
		if err != nil {
			s.fail(err)
		} else {
			s.ops++
			s.acquire.Record(got.Sub(ask))
			s.cycle.Record(end.Sub(call))
		}
		if w.Think > 0 {
			sleepCtx(ctx, w.Think)
		}
	}
	return s
}

// runAllocs measures the heap allocations of uncontended cycles on one
// goroutine with runtime.MemStats, as testing.AllocsPerRun does.
func runAllocs(ctx context.Context, t Target, w Workload) (Result, error) {
	res := Result{Workload: w.ID, Target: t.Name()}
	l, err := t.NewLocker(w.KeyPrefix + "key")
	if err != nil {
		return res, fmt.Errorf("benchkit: %s: new locker: %w", t.Name(), err)
	}
	cycle := func() error {
		if err := l.Lock(ctx); err != nil {
			return err
		}
		return l.Unlock(ctx)
	}
	for range w.Warmup {
		if err := cycle(); err != nil {
			return res, fmt.Errorf("benchkit: %s: warm-up cycle: %w", t.Name(), err)
		}
	}
	ops := max(w.Ops, 1)
	rec := NewRecorder(ops)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	for range ops {
		t0 := time.Now()
		if err := cycle(); err != nil {
			return res, fmt.Errorf("benchkit: %s: cycle: %w", t.Name(), err)
		}
		rec.Record(time.Since(t0))
	}
	res.Elapsed = time.Since(start)
	runtime.ReadMemStats(&after)
	res.Ops = int64(ops)
	res.OpsPerSec = float64(ops) / res.Elapsed.Seconds()
	res.AllocsPerOp = float64(after.Mallocs-before.Mallocs) / float64(ops)
	res.BytesPerOp = float64(after.TotalAlloc-before.TotalAlloc) / float64(ops)
	res.CycleSamples, res.AcquireSamples = rec, NewRecorder(0)
	res.Cycle = rec.Summary()
	return res, nil
}

// keepWorkers is how many goroutines take and release the locks of a Keep
// workload.
const keepWorkers = 64

// runKeep takes w.Locks locks, keeps them for w.Duration and releases them.
// It measures the CPU time and the commands of the hold, and the live heap
// with the locks held against a baseline taken before their handles were
// made (both after a forced GC, outside the hold's CPU time).
func runKeep(ctx context.Context, t KeepTarget, w Workload) (Result, error) {
	res := Result{Workload: w.ID, Target: t.Name()}
	kr := &KeepResult{Locks: w.Locks}
	res.Keep = kr
	// The tool's own bookkeeping is made before the heap baseline, so that
	// the heap per lock counts what the target keeps.
	keepers := make([]Keeper, w.Locks)
	held := make([]bool, len(keepers))
	res.AcquireSamples, res.CycleSamples = NewRecorder(len(keepers)), NewRecorder(0)
	heap0 := settledHeap()
	mem0 := readNodeMemory(ctx, w.Nodes)
	for i := range keepers {
		k, err := t.NewKeeper(w.KeyPrefix+strconv.Itoa(i), w.TTL)
		if err != nil {
			return res, fmt.Errorf("benchkit: %s: new keeper: %w", t.Name(), err)
		}
		keepers[i] = k
	}
	var (
		mu       sync.Mutex
		errs     int64
		firstErr error
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs++
		if firstErr == nil {
			firstErr = err
		}
	}
	forEach := func(fn func(i int)) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range keepWorkers {
			wg.Go(func() {
				for i := int(next.Add(1)) - 1; i < len(keepers); i = int(next.Add(1)) - 1 {
					fn(i)
				}
			})
		}
		wg.Wait()
	}
	start := time.Now()
	forEach(func(i int) {
		t0 := time.Now()
		if err := keepers[i].Lock(ctx); err != nil {
			fail(err)
			return
		}
		d := time.Since(t0)
		mu.Lock()
		res.AcquireSamples.Record(d)
		held[i] = true
		mu.Unlock()
	})
	res.Elapsed = time.Since(start)
	for _, h := range held {
		if h {
			kr.Acquired++
		}
	}

	kr.GCCycleCPUSeconds = collect()
	cpu0, gc0 := cpuSeconds(), readGC()
	srv0 := readServerStats(ctx, w.Nodes)
	holdStart := time.Now()
	sleepCtx(ctx, w.Duration/2)
	kr.Goroutines = runtime.NumGoroutine()
	sleepCtx(ctx, w.Duration-time.Since(holdStart))
	kr.Hold = time.Since(holdStart)
	cpu1, gc1 := cpuSeconds(), readGC()
	srv1 := readServerStats(ctx, w.Nodes)
	kr.AllocBytesPerSec = float64(gc1.allocs-gc0.allocs) / kr.Hold.Seconds()
	kr.GCCycles = int64(gc1.cycles - gc0.cycles)
	kr.CPUSeconds = cpu1 - cpu0
	kr.ServerCPUSeconds = srv1.cpu - srv0.cpu
	kr.Commands = srv1.calls - srv0.calls
	kr.CommandsPerSec = float64(kr.Commands) / kr.Hold.Seconds()
	kr.Scripts = srv1.scripts - srv0.scripts
	kr.ScriptsPerSec = float64(kr.Scripts) / kr.Hold.Seconds()
	kr.Processed = srv1.processedSince(srv0)
	kr.ProcessedPerSec = float64(kr.Processed) / kr.Hold.Seconds()
	kr.CPUFraction = kr.CPUSeconds / kr.Hold.Seconds()
	live := liveHeap()
	kr.SteadyGCs = float64(kr.GCCycles)
	if gogc := gcPercent(); gogc > 0 && live > 0 {
		kr.SteadyGCs = float64(gc1.allocs-gc0.allocs) / (float64(live) * float64(gogc) / 100)
	}
	kr.SteadyCPUSeconds = kr.CPUSeconds + (kr.SteadyGCs-float64(kr.GCCycles))*kr.GCCycleCPUSeconds
	kr.SteadyCPUFraction = kr.SteadyCPUSeconds / kr.Hold.Seconds()
	if kr.Acquired > 0 {
		kr.HeapBytesPerLock = float64(live-heap0) / float64(kr.Acquired)
		mem1 := readNodeMemory(ctx, w.Nodes)
		if mem1.read > 0 && mem1.read == mem0.read {
			kr.NodeBytesPerLock = float64(mem1.used-mem0.used) / float64(mem1.read) / float64(kr.Acquired)
			kr.TrackedKeysPerNode = float64(mem1.trackedKeys-mem0.trackedKeys) / float64(mem1.read)
		}
	}

	var lost atomic.Int64
	var firstLoss atomic.Pointer[string]
	loss := func(err error) {
		lost.Add(1)
		msg := err.Error()
		firstLoss.CompareAndSwap(nil, &msg)
	}
	relCtx := context.WithoutCancel(ctx)
	forEach(func(i int) {
		if !held[i] {
			return
		}
		if err := keepers[i].Lost(); err != nil {
			loss(err)
			_ = keepers[i].Unlock(relCtx) // ends the keeper; the error is expected
			return
		}
		if err := keepers[i].Unlock(relCtx); err != nil {
			loss(err)
			fail(err)
		}
	})
	kr.Lost = int(lost.Load())
	if p := firstLoss.Load(); p != nil {
		kr.FirstLoss = *p
	}
	res.Ops = int64(kr.Acquired)
	res.OpsPerSec = float64(kr.Acquired) / res.Elapsed.Seconds()
	res.Errors = errs
	if firstErr != nil {
		res.FirstError = firstErr.Error()
	}
	res.Acquire = res.AcquireSamples.Summary()
	return res, ctx.Err()
}

// settledHeap returns the live heap once it has stopped shrinking. A
// single collection leaves behind what is only on its way out: sync.Pool
// contents survive one collection in the pools' victim caches, and the
// previous workload's targets may still be closing in goroutines of their
// clients. Counted in the baseline and freed during the hold, that memory
// made the heap per held lock negative (-3,209 B in a CI smoke run of 300
// locks).
func settledHeap() int64 {
	const (
		steady   = 16 << 10 // a drop smaller than this is noise
		attempts = 20
	)
	h := liveHeap()
	for range attempts {
		time.Sleep(20 * time.Millisecond)
		next := liveHeap()
		if h-next < steady {
			return min(h, next)
		}
		h = next
	}
	return h
}

// gcStats is what the runtime has allocated and collected so far.
type gcStats struct{ allocs, cycles uint64 }

func readGC() gcStats {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	var g gcStats
	if s[0].Value.Kind() == metrics.KindUint64 {
		g.allocs = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		g.cycles = s[1].Value.Uint64()
	}
	return g
}

// collect runs a garbage collection and returns the CPU time it took
// (getrusage: the collector's workers, and what else ran meanwhile, which
// is little beside a collection of many held locks).
func collect() float64 {
	cpu0 := cpuSeconds()
	runtime.GC()
	return cpuSeconds() - cpu0
}

// gcPercent is GOGC (runtime/metrics /gc/gogc:percent); 0 when off (the
// metric reads -1 as a uint64 then) or unknown.
func gcPercent() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return max(int64(s[0].Value.Uint64()), 0)
}

// liveHeap runs a garbage collection and returns the heap that survived
// it (runtime/metrics /gc/heap/live:bytes).
func liveHeap() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand documents it)
	return hex.EncodeToString(b)
}
