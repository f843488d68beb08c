package benchkit_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/benchkit"
	"github.com/redlockplus/redlock/internal/testkit/leakcheck"
	"github.com/redlockplus/redlock/internal/testkit/redistest"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m, nil) }

// pools starts n real nodes and returns their pools.
func pools(t *testing.T, n int) []redlock.Pool {
	t.Helper()
	c := redistest.Start(t, n)
	out := make([]redlock.Pool, n)
	for i, p := range c.Pools() {
		out[i] = p
	}
	return out
}

func ours(t *testing.T, ps []redlock.Pool, opts ...redlock.Option) benchkit.KeepTarget {
	t.Helper()
	o, err := benchkit.Ours("redlock", ps, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Close() })
	return o
}

func TestRecorderQuantiles(t *testing.T) {
	r := benchkit.NewRecorder(0)
	for i := 100; i >= 1; i-- {
		r.Record(time.Duration(i) * time.Millisecond)
	}
	s := r.Summary()
	want := benchkit.Latency{N: 100, P50: 50 * time.Millisecond, P90: 90 * time.Millisecond,
		P99: 99 * time.Millisecond, Max: 100 * time.Millisecond, Mean: 50500 * time.Microsecond}
	if s != want {
		t.Fatalf("summary %+v, want %+v", s, want)
	}
	if got := benchkit.NewRecorder(0).Summary(); got != (benchkit.Latency{}) {
		t.Fatalf("empty summary %+v", got)
	}
}

func TestMergeRecomputes(t *testing.T) {
	a := benchkit.Result{Workload: "W1-3", Target: "x", Ops: 2, Elapsed: time.Second,
		CycleSamples: benchkit.NewRecorder(0), AcquireSamples: benchkit.NewRecorder(0), AllocsPerOp: 10}
	b := a
	b.CycleSamples, b.AcquireSamples = benchkit.NewRecorder(0), benchkit.NewRecorder(0)
	b.Ops, b.AllocsPerOp = 6, 30
	a.ClientCPUSeconds, b.ClientCPUSeconds, a.ServerCPUSeconds, b.ServerCPUSeconds = 0.25, 0.5, 1, 2
	a.CycleSamples.Record(time.Millisecond)
	b.CycleSamples.Record(3 * time.Millisecond)
	m := benchkit.Merge(a, b)
	if m.Ops != 8 || m.OpsPerSec != 4 || m.Cycle.N != 2 || m.Cycle.Max != 3*time.Millisecond || m.AllocsPerOp != 25 ||
		m.ClientCPUSeconds != 0.75 || m.ServerCPUSeconds != 3 {
		t.Fatalf("merged %+v", m)
	}
}

func TestCycleOursAndFloor(t *testing.T) {
	ps := pools(t, 3)
	ctx := context.Background()
	w := benchkit.Workload{ID: "W2", Kind: benchkit.Cycle, Goroutines: 8, Duration: 300 * time.Millisecond, Nodes: ps}
	floor := benchkit.Floor("floor", ps, false)
	defer floor.Close()
	for _, target := range []benchkit.Target{ours(t, ps), floor} {
		res, err := benchkit.Run(ctx, target, w)
		if err != nil {
			t.Fatalf("%s: %v", target.Name(), err)
		}
		if res.Ops < 10 || res.Errors != 0 || res.Cycle.P50 <= 0 || res.Cycle.N != int(res.Ops) ||
			res.Acquire.P50 <= 0 || res.Acquire.P50 > res.Cycle.Max || res.OpsPerSec <= 0 {
			t.Fatalf("%s: implausible result %+v (first error %q)", target.Name(), res, res.FirstError)
		}
		if res.ClientCPUSeconds <= 0 || res.ServerCPUSeconds <= 0 {
			t.Fatalf("%s: CPU client %v s, servers %v s: not measured", target.Name(), res.ClientCPUSeconds, res.ServerCPUSeconds)
		}
		// Every cycle writes to and reads from the nodes: at least one
		// event per node at the servers, and one call at the client.
		if res.ServerEvents < res.Ops || runtime.GOOS == "linux" && res.ClientSyscalls < res.Ops {
			t.Fatalf("%s: %d client syscalls and %d node events for %d cycles", target.Name(), res.ClientSyscalls, res.ServerEvents, res.Ops)
		}
	}
}

func TestFloorAtQuorumReportsFailures(t *testing.T) {
	ps := pools(t, 3)
	floor := benchkit.Floor("floor", ps, true)
	defer floor.Close()
	a, _ := floor.NewLocker("benchkit:test:taken")
	b, _ := floor.NewLocker("benchkit:test:taken")
	ctx := context.Background()
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Lock(ctx); err == nil {
		t.Fatal("the floor set a key that was already set on every node")
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Lock(ctx); err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSharedKeyNoOverlap(t *testing.T) {
	ps := pools(t, 3)
	w := benchkit.Workload{ID: "W3", Kind: benchkit.Cycle, Goroutines: 4, SharedKey: true,
		Hold: time.Millisecond, Think: 2 * time.Millisecond, CheckOverlap: true, Duration: time.Second}
	res, err := benchkit.Run(context.Background(), ours(t, ps, redlock.WithRetryDelay(5*time.Millisecond)), w)
	if err != nil {
		t.Fatal(err)
	}
	if res.Overlaps != 0 || res.Ops < 5 {
		t.Fatalf("overlaps %d, ops %d, want 0 and some", res.Overlaps, res.Ops)
	}
}

// noLock is a target whose locks exclude nothing, to show that the overlap
// check can fail.
type noLock struct{}

func (noLock) Name() string                              { return "nolock" }
func (noLock) NewLocker(string) (benchkit.Locker, error) { return noLock{}, nil }
func (noLock) Close() error                              { return nil }
func (noLock) Lock(context.Context) error                { return nil }
func (noLock) Unlock(context.Context) error              { return nil }

func TestOverlapDetected(t *testing.T) {
	w := benchkit.Workload{ID: "W3", Kind: benchkit.Cycle, Goroutines: 8, SharedKey: true,
		Hold: 2 * time.Millisecond, CheckOverlap: true, Duration: 200 * time.Millisecond}
	res, err := benchkit.Run(context.Background(), noLock{}, w)
	if err != nil {
		t.Fatal(err)
	}
	if res.Overlaps == 0 {
		t.Fatal("8 goroutines holding a non-lock at once were not reported as overlaps")
	}
}

func TestAllocs(t *testing.T) {
	ps := pools(t, 3)
	floor := benchkit.Floor("floor", ps, false)
	defer floor.Close()
	w := benchkit.Workload{ID: "W5", Kind: benchkit.Allocs, Ops: 100, Warmup: 10}
	for _, target := range []benchkit.Target{ours(t, ps), floor} {
		res, err := benchkit.Run(context.Background(), target, w)
		if err != nil {
			t.Fatal(err)
		}
		if res.Ops != 100 || res.AllocsPerOp < 1 || res.BytesPerOp < res.AllocsPerOp || res.Cycle.N != 100 {
			t.Fatalf("%s: implausible %+v", target.Name(), res)
		}
	}
}

func TestKeep(t *testing.T) {
	ps := pools(t, 3)
	w := benchkit.Workload{ID: "W6", Kind: benchkit.Keep, Locks: 50, TTL: 400 * time.Millisecond,
		Duration: 1200 * time.Millisecond, Nodes: ps}
	res, err := benchkit.Run(context.Background(), ours(t, ps), w)
	if err != nil {
		t.Fatal(err)
	}
	k := res.Keep
	if k == nil || k.Acquired != 50 || k.Lost != 0 || res.Errors != 0 {
		t.Fatalf("keep result %+v (first error %q)", k, res.FirstError)
	}
	// 50 locks over 3 nodes, extended several times within 3 TTLs.
	if k.Commands < 150 || k.CommandsPerSec <= 0 || k.Scripts <= 0 || k.Scripts > k.Commands || k.CPUSeconds <= 0 || k.Hold < w.Duration {
		t.Fatalf("keep costs not measured: %+v", k)
	}
	if k.Processed < k.Scripts || k.ProcessedPerSec <= 0 ||
		k.CPUFraction != k.CPUSeconds/k.Hold.Seconds() || k.HeapBytesPerLock <= 0 {
		t.Fatalf("keep costs not measured: %+v", k)
	}
	// Extensions allocate, so a steady state has collections; the steady
	// CPU trades the hold's own collections for them.
	if k.SteadyGCs <= 0 || k.GCCycleCPUSeconds < 0 || k.SteadyCPUSeconds <= 0 ||
		k.SteadyCPUSeconds != k.CPUSeconds+(k.SteadyGCs-float64(k.GCCycles))*k.GCCycleCPUSeconds ||
		k.SteadyCPUFraction != k.SteadyCPUSeconds/k.Hold.Seconds() {
		t.Fatalf("steady keep costs not measured: %+v", k)
	}
	if _, err := benchkit.Run(context.Background(), noLock{}, w); !errors.Is(err, benchkit.ErrNotSupported) {
		t.Fatalf("keep on a plain target: %v, want ErrNotSupported", err)
	}
}

// TestKeepCountsLosses deletes every key in the middle of the hold: each
// lock must be reported lost, with a reason.
func TestKeepCountsLosses(t *testing.T) {
	c := redistest.Start(t, 3)
	ps := make([]redlock.Pool, 3)
	for i, p := range c.Pools() {
		ps[i] = p
	}
	w := benchkit.Workload{ID: "W6", Kind: benchkit.Keep, Locks: 20, TTL: 500 * time.Millisecond,
		Duration: 2 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(700 * time.Millisecond) // acquired by then, well before the hold ends
		for _, n := range c.Nodes {
			conn, err := n.Pool().GetContext(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := conn.Do("FLUSHALL"); err != nil {
				t.Error(err)
			}
			conn.Close()
		}
	}()
	res, err := benchkit.Run(context.Background(), ours(t, ps), w)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if k := res.Keep; k == nil || k.Acquired != 20 || k.Lost != 20 || k.FirstLoss == "" {
		t.Fatalf("after FLUSHALL: keep result %+v, want 20 of 20 lost with a reason", k)
	}
}

func TestServerStatsCounts(t *testing.T) {
	ps := pools(t, 3)
	ctx := context.Background()
	before, err := benchkit.ServerStats(ctx, ps[0])
	if err != nil {
		t.Fatal(err)
	}
	c, _ := ps[0].GetContext(ctx)
	for range 5 {
		if _, err := c.Do("SET", "benchkit:test:k", "v"); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	after, err := benchkit.ServerStats(ctx, ps[0])
	if err != nil {
		t.Fatal(err)
	}
	if d := after.Calls - before.Calls; d != 5 {
		t.Fatalf("commandstats delta %d, want 5", d)
	}
	if d := after.Processed - before.Processed; d != 5+benchkit.InfoCalls {
		t.Fatalf("total_commands_processed delta %d, want 5 and the %d INFO calls of a read", d, benchkit.InfoCalls)
	}
	c, _ = ps[0].GetContext(ctx)
	if _, err := c.Do("EVAL", `redis.call("GET", KEYS[1]); return redis.call("GET", KEYS[1])`, 1, "benchkit:test:k"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	last, err := benchkit.ServerStats(ctx, ps[0])
	if err != nil {
		t.Fatal(err)
	}
	if calls, scripts := last.Calls-after.Calls, last.ScriptCalls-after.ScriptCalls; calls != 3 || scripts != 1 {
		t.Fatalf("after one EVAL of two GETs: %d calls, %d scripts; want 3 and 1", calls, scripts)
	}
	if d := last.Processed - after.Processed; d != 3+benchkit.InfoCalls {
		t.Fatalf("after one EVAL of two GETs: total_commands_processed delta %d, want 3 and the %d INFO calls", d, benchkit.InfoCalls)
	}
}

func TestStandard(t *testing.T) {
	ids := map[string]bool{}
	for _, w := range benchkit.Standard(false) {
		ids[w.Goal()] = true
		if w.Kind == benchkit.Cycle && (w.Duration <= 0 || w.Goroutines < 1) {
			t.Fatalf("%s: no duration or goroutines", w.ID)
		}
	}
	for _, g := range []string{"W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9"} {
		if !ids[g] {
			t.Fatalf("Standard lacks %s", g)
		}
	}
	for _, quick := range []bool{false, true} {
		for _, w := range benchkit.Standard(quick) {
			switch {
			case w.ID == "W7" && !quick && (w.Locks != 100000 || w.TTL != 30*time.Second || w.Duration != time.Minute):
				t.Errorf("W7: %d locks, TTL %v, for %v; want 100000, 30s, 1m", w.Locks, w.TTL, w.Duration)
			case w.ID == "W7" && quick && (w.Locks > 5000 || w.Duration > 5*time.Second):
				t.Errorf("quick W7: %d locks for %v, want a smoke test", w.Locks, w.Duration)
			case w.ID == "W8" && w.NodeCount != 7:
				t.Errorf("W8 on %d nodes, want 7", w.NodeCount)
			case w.Kind == benchkit.Detect && (w.Ops < 1 || w.MaxWait <= 0 || w.TTL != 2*time.Minute):
				t.Errorf("%s: %d samples, wait %v, TTL %v", w.ID, w.Ops, w.MaxWait, w.TTL)
			}
		}
	}
}

// TestDetect breaks the keys of locks with a short TTL: the holder notices
// at its next extension at the latest, long before the bound, so every
// sample is noticed and none is an error (which a key not found would be).
func TestDetect(t *testing.T) {
	ps := pools(t, 3)
	w := benchkit.Workload{ID: "W9", Kind: benchkit.Detect, Ops: 4, TTL: 300 * time.Millisecond,
		Hold: 10 * time.Millisecond, MaxWait: 10 * time.Second, Nodes: ps}
	res, err := benchkit.Run(context.Background(), ours(t, ps), w)
	if err != nil {
		t.Fatal(err)
	}
	d := res.Detect
	if d == nil || d.Samples != 4 || d.Noticed != 4 || d.Missed != 0 || res.Errors != 0 || res.Ops != 4 ||
		d.Latency.N != 4 || d.Latency.P50 <= 0 || d.Latency.Max >= w.MaxWait {
		t.Fatalf("detect result %+v %+v (first error %q)", d, res, res.FirstError)
	}
	if _, err := benchkit.Run(context.Background(), noLock{}, w); !errors.Is(err, benchkit.ErrNotSupported) {
		t.Fatalf("detect on a plain target: %v, want ErrNotSupported", err)
	}
}

// deaf is ours whose locks never say they are lost.
type deaf struct{ benchkit.WatchTarget }

type deafWatcher struct{ benchkit.Watcher }

func (deafWatcher) Done() <-chan struct{} { return nil }

func (d deaf) NewWatcher(key string, ttl time.Duration) (benchkit.Watcher, error) {
	w, err := d.WatchTarget.NewWatcher(key, ttl)
	return deafWatcher{w}, err
}

// TestDetectCountsMisses: a holder that never notices is a miss per sample,
// recorded at the bound.
func TestDetectCountsMisses(t *testing.T) {
	ps := pools(t, 3)
	w := benchkit.Workload{ID: "W9", Kind: benchkit.Detect, Ops: 3, TTL: time.Minute,
		MaxWait: 20 * time.Millisecond, Nodes: ps}
	res, err := benchkit.Run(context.Background(), deaf{ours(t, ps).(benchkit.WatchTarget)}, w)
	if err != nil {
		t.Fatal(err)
	}
	if d := res.Detect; d == nil || d.Samples != 3 || d.Missed != 3 || d.Noticed != 0 || d.Latency.P50 != w.MaxWait || res.Errors != 0 {
		t.Fatalf("detect result %+v (first error %q)", d, res.FirstError)
	}
	m := benchkit.Merge(res, res)
	if d := m.Detect; d.Samples != 6 || d.Missed != 6 || d.Latency.N != 6 {
		t.Fatalf("merged detect result %+v", d)
	}
}

// TestDetectWrongKeys: keys that are not the lock's are reported as
// errors, not as samples.
func TestDetectWrongKeys(t *testing.T) {
	ps := pools(t, 3)
	w := benchkit.Workload{ID: "W9", Kind: benchkit.Detect, Ops: 2, TTL: time.Minute,
		MaxWait: 20 * time.Millisecond, Nodes: ps}
	res, err := benchkit.Run(context.Background(), wrongKeys{ours(t, ps).(benchkit.WatchTarget)}, w)
	if err != nil {
		t.Fatal(err)
	}
	if d := res.Detect; d == nil || d.Samples != 0 || res.Errors != 2 || !strings.Contains(res.FirstError, "no such key") {
		t.Fatalf("detect result %+v, errors %d (first %q)", d, res.Errors, res.FirstError)
	}
}

// wrongKeys is ours naming keys that do not exist as its loss keys.
type wrongKeys struct{ benchkit.WatchTarget }

func (w wrongKeys) LossKeys(key string) []benchkit.NodeKey {
	return w.WatchTarget.LossKeys(key + ":not-the-lock")
}
