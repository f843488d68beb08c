package failover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockplus/redlock"
)

// epoch anchors the one clock every client of the suite reads. time.Since
// uses the monotonic reading, so wall-clock steps cannot disturb a history.
var epoch = time.Now()

// now is the shared monotonic clock.
func now() time.Duration { return time.Since(epoch) }

// interval is one holding as its holder saw it: from the return of a
// successful acquire to the end of its validity, or to the moment it started
// to release, whichever came first.
type interval struct {
	lock       string
	holder     string // unique per holding (the token)
	start, end time.Duration
}

// overlap is two holdings of one lock by different holders at once.
type overlap struct{ a, b interval }

func (o overlap) String() string {
	return fmt.Sprintf("%s: %s [%v, %v] and %s [%v, %v] overlap by %v", o.a.lock,
		short(o.a.holder), o.a.start, o.a.end, short(o.b.holder), o.b.start, o.b.end,
		min(o.a.end, o.b.end)-o.b.start)
}

func short(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

// findOverlaps returns overlapping holdings. It sweeps each lock's
// intervals in start order against the one that ends last so far, so it
// reports at least one pair whenever any two intervals overlap.
func findOverlaps(ivs []interval) []overlap {
	byLock := map[string][]interval{}
	for _, iv := range ivs {
		byLock[iv.lock] = append(byLock[iv.lock], iv)
	}
	var out []overlap
	for _, list := range byLock {
		sort.Slice(list, func(i, j int) bool { return list[i].start < list[j].start })
		var last *interval
		for i := range list {
			iv := &list[i]
			if last != nil && iv.start < last.end && iv.holder != last.holder {
				out = append(out, overlap{*last, *iv})
			}
			if last == nil || iv.end > last.end {
				last = iv
			}
		}
	}
	return out
}

// history records what the clients of one scenario saw.
type history struct {
	mu        sync.Mutex
	holds     []interval
	successAt []span // each successful acquire, from its start to its end
	failedAt  []failedSpan
	attempts  int
	successes int
	failures  map[string]int
	latencies []time.Duration // of successful acquires
	witness   map[string]*witness
	tokens    []issue // fencing tokens handed out (fencing_test.go)
}

func newHistory() *history {
	return &history{failures: map[string]int{}, witness: map[string]*witness{}}
}

// span is a stretch of the shared clock.
type span struct{ from, to time.Duration }

// failedSpan is a failed acquire, its cause and its error.
type failedSpan struct {
	span
	cause string
	err   string
}

// attempt records one acquire attempt that ran from t0 to t1.
func (h *history) attempt(t0, t1 time.Duration, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.attempts++
	if err == nil {
		h.successes++
		h.latencies = append(h.latencies, t1-t0)
		h.successAt = append(h.successAt, span{t0, t1})
		return
	}
	c := cause(err)
	h.failures[c]++
	h.failedAt = append(h.failedAt, failedSpan{span{t0, t1}, c, err.Error()})
}

// hold records a holding.
func (h *history) hold(lock, holder string, start, end time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.holds = append(h.holds, interval{lock: lock, holder: holder, start: start, end: end})
}

// held reports whether token was a holder's.
func (h *history) held(token string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, iv := range h.holds {
		if iv.holder == token {
			return true
		}
	}
	return false
}

// successCount is the number of successful acquires so far.
func (h *history) successCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.successes
}

// successesIn counts the successful acquires that started and ended
// within [from, to).
func (h *history) successesIn(from, to time.Duration) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, s := range h.successAt {
		if s.from >= from && s.to < to {
			n++
		}
	}
	return n
}

// failuresIn counts, by cause, the failed acquires that started and ended
// within [from, to).
func (h *history) failuresIn(from, to time.Duration) map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]int{}
	for _, f := range h.failedAt {
		if f.from >= from && f.to < to {
			out[f.cause]++
		}
	}
	return out
}

// failureExamplesIn returns, for each cause of the acquires that failed
// within [from, to), the error of the first of them: what a window without
// an acquisition saw.
func (h *history) failureExamplesIn(from, to time.Duration) map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]string{}
	for _, f := range h.failedAt {
		if _, seen := out[f.cause]; !seen && f.from >= from && f.to < to {
			out[f.cause] = f.err
		}
	}
	return out
}

// longestGap is the longest stretch of [from, to) in which no acquire
// succeeded: between from, the ends of the successful acquires and to.
func (h *history) longestGap(from, to time.Duration) time.Duration {
	h.mu.Lock()
	ends := []time.Duration{from, to}
	for _, s := range h.successAt {
		if s.to > from && s.to < to {
			ends = append(ends, s.to)
		}
	}
	h.mu.Unlock()
	slices.Sort(ends)
	gap := time.Duration(0)
	for i := 1; i < len(ends); i++ {
		gap = max(gap, ends[i]-ends[i-1])
	}
	return gap
}

// acquireOnce has l take its lock in one attempt, recorded in h, and returns
// when the attempt ended and the validity it gave; the test fails, saying
// where, when the lock was not taken.
func acquireOnce(t *testing.T, h *history, l *redlock.Lock, where string) (end, validity time.Duration) {
	t.Helper()
	t0 := now()
	validity, err := l.TryAcquire(context.Background())
	end = now()
	h.attempt(t0, end, err)
	if err != nil {
		t.Fatalf("A could not acquire on %s: %v", where, err)
	}
	return end, validity
}

// firstSuccessAfter returns the end of the first successful acquire that
// ended after t.
func (h *history) firstSuccessAfter(t time.Duration) (time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	best, ok := time.Duration(0), false
	for _, s := range h.successAt {
		if s.to > t && (!ok || s.to < best) {
			best, ok = s.to, true
		}
	}
	return best, ok
}

// cause names why an attempt failed, for the figures.
func cause(err error) string {
	var ne *redlock.NodeError
	switch {
	case errors.Is(err, redlock.ErrContested): // before the deadline, which it matches too
		return "contested"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "context ended"
	case errors.Is(err, errNotAcquired): // the reference client
		return "refused"
	case strings.Contains(err.Error(), "validity"):
		return "validity not positive"
	case errors.Is(err, redlock.ErrNotVoting): // the node guard kept a yes out
		return "not voting"
	case errors.As(err, &ne):
		return "node errors"
	case errors.Is(err, redlock.ErrNotAcquired):
		return "refused (held)"
	}
	return "other: " + err.Error()
}

// witness is a read-sleep-write counter guarded by a lock: two critical
// sections at once lose an update.
type witness struct {
	value  atomic.Int64
	writes atomic.Int64
}

func (h *history) witnessFor(lock string) *witness {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.witness[lock]
	if w == nil {
		w = new(witness)
		h.witness[lock] = w
	}
	return w
}

// lostUpdates is how many witness writes were lost.
func (h *history) lostUpdates() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	lost := int64(0)
	for _, w := range h.witness {
		lost += w.writes.Load() - w.value.Load()
	}
	return int(lost)
}

// overlaps checks the history.
func (h *history) overlaps() []overlap {
	h.mu.Lock()
	defer h.mu.Unlock()
	return findOverlaps(h.holds)
}

// percentile returns the p-th percentile of ds (0 when empty).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p)
	return s[i]
}

// report is the figures of one scenario, logged and, when FAILOVER_REPORT
// names a file, appended to it as one JSON line (docs/SAFETY.md quotes them).
type report struct {
	Scenario    string         `json:"scenario"`
	Backend     string         `json:"backend"`
	Client      string         `json:"client"` // the library's factories' (clientName)
	Clients     int            `json:"clients"`
	Attempts    int            `json:"attempts"`
	Successes   int            `json:"successes"`
	Failures    map[string]int `json:"failures"`
	Overlaps    int            `json:"overlaps"`
	LostUpdates int            `json:"lost_updates"`
	Orphans     int            `json:"orphans"`
	P50         time.Duration  `json:"p50_ns"`
	P99         time.Duration  `json:"p99_ns"`
	Detect      time.Duration  `json:"detect_ns,omitempty"`
	Wall        time.Duration  `json:"wall_ns"`
	Note        string         `json:"note,omitempty"`
}

// figures fills a report from a history.
func (h *history) figures(name string, clients int) report {
	ov := h.overlaps()
	lost := h.lostUpdates()
	h.mu.Lock()
	defer h.mu.Unlock()
	f := map[string]int{}
	for k, v := range h.failures {
		f[k] = v
	}
	return report{
		Scenario: name, Clients: clients, Attempts: h.attempts, Successes: h.successes,
		Failures: f, Overlaps: len(ov), LostUpdates: lost,
		P50: percentile(h.latencies, 0.5), P99: percentile(h.latencies, 0.99),
	}
}

// causes prints failure counts by cause in a stable order.
func causes(m map[string]int) string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func (r report) String() string {
	s := fmt.Sprintf("%s [%s, %s]: clients=%d attempts=%d successes=%d failures{%s} overlaps=%d lost_updates=%d orphans=%d acquire_p50=%v p99=%v",
		r.Scenario, r.Backend, r.Client, r.Clients, r.Attempts, r.Successes, causes(r.Failures),
		r.Overlaps, r.LostUpdates, r.Orphans, r.P50.Round(10*time.Microsecond), r.P99.Round(10*time.Microsecond))
	if r.Detect > 0 {
		s += fmt.Sprintf(" detect=%v", r.Detect.Round(time.Millisecond))
	}
	s += fmt.Sprintf(" wall=%v", r.Wall.Round(10*time.Millisecond))
	if r.Note != "" {
		s += " (" + r.Note + ")"
	}
	return s
}

var reportMu sync.Mutex

// log writes the figures to the test log and the report file.
func (r report) log(t *testing.T) {
	t.Helper()
	r.Client = clientName()
	t.Log(r.String())
	path := os.Getenv("FAILOVER_REPORT")
	if path == "" {
		return
	}
	reportMu.Lock()
	defer reportMu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Errorf("report file: %v", err)
		return
	}
	defer f.Close()
	b, _ := json.Marshal(r)
	fmt.Fprintf(f, "%s\n", b)
}

// locker is one acquisition by one client: the library's Lock or the
// suite's reference client, so that both run the same workloads and checks.
type locker interface {
	// acquire makes one attempt and returns the validity.
	acquire(ctx context.Context) (time.Duration, error)
	release(ctx context.Context) error
	// id names the holding (its token).
	id() string
}

// workload is what the contending clients do.
type workload struct {
	clients    int
	names      []string                 // client k contends for names[k%len(names)]
	newLocker  func(name string) locker // a fresh locker per attempt
	retryDelay time.Duration            // pause after a failed attempt: uniform in [0, retryDelay]
	hold       func(r *rand.Rand) time.Duration
	expire     bool // hold to the end of the validity and never release
	witness    bool // run the read-sleep-write counter in the critical section
	// section, when set, is the critical section instead of hold and
	// witness; end is where the holder's validity ends, fence the
	// holding's fencing token (0 when not fenced).
	section func(name string, fence int64, end time.Duration, rng *rand.Rand)
	target  int // stop after this many successes (0: only when stopped)
}

// start runs the workload until stop is called or the target is reached.
// stop waits for every client to finish.
func (w workload) start(h *history) (stop func(), reached <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var once sync.Once
	var total atomic.Int64
	var wg sync.WaitGroup
	for k := 0; k < w.clients; k++ {
		name := w.names[k%len(w.names)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(k), uint64(time.Now().UnixNano())))
			for ctx.Err() == nil {
				w.once(ctx, h, name, rng, func() {
					if n := total.Add(1); w.target > 0 && n >= int64(w.target) {
						once.Do(func() { close(done) })
					}
				})
			}
		}()
	}
	return func() { cancel(); wg.Wait() }, done
}

// once is one client's attempt and, when it succeeds, its critical section.
func (w workload) once(ctx context.Context, h *history, name string, rng *rand.Rand, won func()) {
	l := w.newLocker(name)
	t0 := now()
	v, err := l.acquire(ctx)
	t1 := now()
	if err != nil {
		if ctx.Err() == nil { // not an attempt cut short by the end of the run
			h.attempt(t0, t1, err)
		}
		sleepCtx(ctx, time.Duration(rng.Int64N(int64(w.retryDelay)+1)))
		return
	}
	h.attempt(t0, t1, nil)
	won()
	end := t1 + v
	var fence int64
	if f, ok := l.(fencer); ok {
		fence = f.fence()
		h.issued(name, fence, t0, t1)
	}
	if w.section != nil {
		w.section(name, fence, end, rng)
		stopAt := now()
		h.hold(name, l.id(), t1, min(end, stopAt))
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = l.release(rctx)
		cancel()
		return
	}
	var wit *witness
	var read int64
	if w.witness {
		wit = h.witnessFor(name)
		read = wit.value.Load()
	}
	if w.expire {
		time.Sleep(end - now() - time.Millisecond)
	} else if w.hold != nil {
		time.Sleep(w.hold(rng))
	}
	stopAt := now()
	if wit != nil && stopAt < end { // a careful holder writes only while it holds
		wit.value.Store(read + 1)
		wit.writes.Add(1)
	}
	h.hold(name, l.id(), t1, min(end, stopAt))
	if !w.expire {
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = l.release(rctx)
		cancel()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// libLocker is one acquisition through the library.
type libLocker struct{ l *redlock.Lock }

func (l libLocker) acquire(ctx context.Context) (time.Duration, error) { return l.l.TryAcquire(ctx) }
func (l libLocker) release(ctx context.Context) error                  { return l.l.Release(ctx) }
func (l libLocker) id() string                                         { return l.l.Token() }
func (l libLocker) fence() int64                                       { return l.l.Fence() }

// libLockers makes lockers of a factory whose options make TryAcquire one
// attempt (WithRetryTimes(0)).
func libLockers(f *redlock.Factory) func(string) locker {
	return func(name string) locker { return libLocker{f.NewLock(name)} }
}

// TestFindOverlaps checks the checker itself on hand-made histories.
func TestFindOverlaps(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	cases := []struct {
		name string
		ivs  []interval
		want int
	}{
		{"disjoint", []interval{{"a", "x", ms(0), ms(10)}, {"a", "y", ms(10), ms(20)}}, 0},
		{"other lock", []interval{{"a", "x", ms(0), ms(10)}, {"b", "y", ms(5), ms(20)}}, 0},
		{"overlap", []interval{{"a", "x", ms(0), ms(10)}, {"a", "y", ms(9), ms(20)}}, 1},
		{"nested in a long one", []interval{{"a", "x", ms(0), ms(100)}, {"a", "y", ms(10), ms(20)}, {"a", "z", ms(50), ms(60)}}, 2},
		{"unsorted", []interval{{"a", "y", ms(30), ms(40)}, {"a", "x", ms(0), ms(35)}}, 1},
	}
	for _, tc := range cases {
		if got := findOverlaps(tc.ivs); len(got) != tc.want {
			t.Errorf("%s: %d overlaps %v, want %d", tc.name, len(got), got, tc.want)
		}
	}
}
