package failover

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock"
	"github.com/redlockplus/redlock/internal/testkit/faultpool"
)

// The coordination recipes of issue 11 under faults: one scenario per
// primitive under a minority killed (and restarted after the TTL), paused
// and partitioned, each proven by its history checker, and a planted bug
// per new checker that it must flag.

// recipes runs the recipe scenarios.
func (s *suite) recipes(t *testing.T) {
	t.Run("semaphore", s.recipeSemaphore)
	t.Run("rwlock", s.recipeRWLock)
	t.Run("multilock", s.recipeMultiLock)
	t.Run("election", s.recipeElection)
	// The planted bugs' library controls take quorums of exactly three
	// nodes, for TTLs up to 10 s: nodes 0 and 1, restarted by every
	// recipe above, must vote for such a lock again, or the node guard,
	// not the recipe, would refuse the library there.
	waited := s.waitVoting(t, factory(t, s.c.Pools(), redlock.WithTTL(10*time.Second)))
	t.Logf("the restarted nodes vote for a TTL of 10s again after %v", waited.Round(time.Millisecond))
	t.Run("planted_counting_semaphore", s.plantedCountingSemaphore)
	t.Run("planted_reader_without_writer_check", s.plantedReader)
	t.Run("planted_multilock_partial_grant", s.plantedPartialMultiLock)
	t.Run("planted_minority_leader", s.plantedMinorityLeader)
}

// recipeTTL is the TTL of the recipe scenarios; a fault window outlasts it,
// so that a killed node comes back after the TTL, as Redlock requires.
const recipeTTL = time.Second

// minorityWindows injects kill {0,1}, pause {2,3} and partition {4,0}, one
// window each, while the workload runs, and reports the successes per
// window; one with none fails the test.
func (s *suite) minorityWindows(t *testing.T, h *history) string {
	t.Helper()
	faults := []struct {
		kind  string
		nodes [2]int
	}{{"kill", [2]int{0, 1}}, {"pause", [2]int{2, 3}}, {"partition", [2]int{4, 0}}}
	var notes []string
	for _, f := range faults {
		from := now()
		for _, i := range f.nodes {
			map[string]func(int){"kill": s.c.Kill, "pause": s.c.Pause, "partition": s.c.Partition}[f.kind](i)
		}
		time.Sleep(recipeTTL + recipeTTL/2)
		to := now()
		for _, i := range f.nodes {
			map[string]func(int){"kill": s.c.Restart, "pause": s.c.Unpause, "partition": s.c.Heal}[f.kind](i)
		}
		n := h.successesIn(from, to)
		notes = append(notes, fmt.Sprintf("%s %v: %d", f.kind, f.nodes, n))
		if n == 0 {
			t.Errorf("no acquisition while nodes %v were %s", f.nodes, f.kind)
		}
		time.Sleep(recipeTTL) // queued commands of a paused node expire
	}
	return strings.Join(notes, ", ")
}

// maxDepth is the largest number of intervals of lock that hold at once.
func maxDepth(ivs []interval, lock string) int {
	type edge struct {
		at    time.Duration
		delta int
	}
	var edges []edge
	for _, iv := range ivs {
		if iv.lock == lock && iv.end > iv.start {
			edges = append(edges, edge{iv.start, 1}, edge{iv.end, -1})
		}
	}
	sort.Slice(edges, func(i, j int) bool {
		return edges[i].at < edges[j].at || edges[i].at == edges[j].at && edges[i].delta < edges[j].delta
	})
	depth, most := 0, 0
	for _, e := range edges {
		depth += e.delta
		most = max(most, depth)
	}
	return most
}

// crossOverlaps counts pairs of an interval of lock a and one of lock b
// that intersect: a writer (a) overlapping a reader (b).
func crossOverlaps(ivs []interval, a, b string) int {
	n := 0
	for _, x := range ivs {
		for _, y := range ivs {
			if x.lock == a && y.lock == b && x.start < y.end && y.start < x.end {
				n++
			}
		}
	}
	return n
}

// multiLockOverlaps is the multi-lock checker: each interval of a
// multi-lock counts for every one of its names, and no name may be held by
// two holders at once.
func multiLockOverlaps(ivs []interval) []overlap { return findOverlaps(splitNames(ivs)) }

// splitNames turns the interval of a lock named "x+y" into one per name,
// for the overlap checker: a multi-lock holds each of its names.
func splitNames(ivs []interval) []interval {
	var out []interval
	for _, iv := range ivs {
		for _, name := range strings.Split(iv.lock, "+") {
			part := iv
			part.lock = name
			out = append(out, part)
		}
	}
	return out
}

func (h *history) intervals() []interval {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]interval(nil), h.holds...)
}

// anyLocker is a primitive as a workload locker: one attempt.
type anyLocker struct{ l redlock.Locker }

func (l anyLocker) acquire(ctx context.Context) (time.Duration, error) { return l.l.TryAcquire(ctx) }
func (l anyLocker) release(ctx context.Context) error                  { return l.l.Release(ctx) }
func (l anyLocker) id() string                                         { return l.l.Token() }

// recipeSemaphore: 12 clients contend for 2 permits under minority faults;
// never more than 2 hold at once.
func (s *suite) recipeSemaphore(t *testing.T) {
	start := time.Now()
	f := factory(t, s.c.Pools(), redlock.WithTTL(recipeTTL))
	h := newHistory()
	w := workload{
		clients: 12, names: []string{"r:sem"},
		newLocker:  func(name string) locker { return anyLocker{f.NewSemaphore(name, 2)} },
		retryDelay: 20 * time.Millisecond, hold: holdUniform(5 * time.Millisecond),
	}
	stop, _ := w.start(h)
	note := s.minorityWindows(t, h)
	stop()
	r := h.figures("12 semaphore, 2 permits, minority faults", w.clients)
	depth := maxDepth(h.intervals(), "r:sem")
	r.Note = fmt.Sprintf("at most %d holders at once; acquisitions per window: %s", depth, note)
	r.Backend, r.Wall = string(s.c.Backend()), time.Since(start)
	r.log(t)
	if depth > 2 {
		t.Errorf("%d holders of a 2-permit semaphore at once", depth)
	}
}

// recipeRWLock: 4 writers and 8 readers under minority faults; no writer
// overlaps a reader or another writer.
func (s *suite) recipeRWLock(t *testing.T) {
	start := time.Now()
	f := factory(t, s.c.Pools(), redlock.WithTTL(recipeTTL))
	h := newHistory()
	w := workload{
		clients: 12, names: []string{"r:rw", "r:rw/r", "r:rw/r"},
		newLocker: func(name string) locker {
			if base, ok := strings.CutSuffix(name, "/r"); ok {
				return anyLocker{f.NewReadLock(base)}
			}
			return anyLocker{f.NewWriteLock(name)}
		},
		retryDelay: 20 * time.Millisecond, hold: holdUniform(5 * time.Millisecond),
	}
	stop, _ := w.start(h)
	note := s.minorityWindows(t, h)
	stop()
	ivs := h.intervals()
	writers, cross := len(findOverlaps(ivs))-readerPairs(ivs), crossOverlaps(ivs, "r:rw", "r:rw/r")
	r := h.figures("12 read-write lock, 4 writers, 8 readers, minority faults", w.clients)
	r.Note = fmt.Sprintf("writer/writer overlaps %d, writer/reader overlaps %d, up to %d readers at once; acquisitions per window: %s",
		writers, cross, maxDepth(ivs, "r:rw/r"), note)
	r.Backend, r.Wall = string(s.c.Backend()), time.Since(start)
	r.log(t)
	if writers > 0 || cross > 0 {
		t.Errorf("%d writer/writer and %d writer/reader overlaps", writers, cross)
	}
}

// readerPairs counts the overlaps findOverlaps reports among readers, which
// share legitimately.
func readerPairs(ivs []interval) int {
	var readers []interval
	for _, iv := range ivs {
		if iv.lock == "r:rw/r" {
			readers = append(readers, iv)
		}
	}
	return len(findOverlaps(readers))
}

// recipeMultiLock: multi-locks over {a,b}, {b,c}, {c,a} and plain locks of
// a and c contend under minority faults; no name is held twice at once.
func (s *suite) recipeMultiLock(t *testing.T) {
	start := time.Now()
	f := factory(t, s.c.Pools(), redlock.WithTTL(recipeTTL))
	h := newHistory()
	w := workload{
		clients: 10, names: []string{"r:m:a+r:m:b", "r:m:b+r:m:c", "r:m:c+r:m:a", "r:m:a", "r:m:c"},
		newLocker: func(name string) locker {
			if names := strings.Split(name, "+"); len(names) > 1 {
				return anyLocker{f.NewMultiLock(names)}
			}
			return anyLocker{f.NewLock(name)}
		},
		retryDelay: 20 * time.Millisecond, hold: holdUniform(5 * time.Millisecond),
	}
	stop, _ := w.start(h)
	note := s.minorityWindows(t, h)
	stop()
	overlaps := multiLockOverlaps(h.intervals())
	r := h.figures("12 multi-lock, 3 overlapping sets and 2 plain locks, minority faults", w.clients)
	r.Note = fmt.Sprintf("overlaps on a name %d; acquisitions per window: %s", len(overlaps), note)
	r.Backend, r.Wall = string(s.c.Backend()), time.Since(start)
	r.log(t)
	for i, o := range overlaps {
		if i == 5 {
			break
		}
		t.Errorf("overlap: %v", o)
	}
	checkNoKeys(t, s, "r:m:*")
}

// checkNoKeys fails when a key matching pattern is left on a node once the
// clients stopped and their TTLs passed: no half-acquired set survives.
func checkNoKeys(t *testing.T, s *suite, pattern string) {
	t.Helper()
	time.Sleep(recipeTTL + 100*time.Millisecond)
	for i, ks := range s.keys(t, pattern) {
		if len(ks) > 0 {
			t.Errorf("node %d keeps %v", i, ks)
		}
	}
}

// campaigner is an Election as a workload locker: one Campaign bounded by
// a short context. Its interval runs to TTL - drift after the Campaign
// returned, an upper bound of the validity, so the checker never misses
// an overlap by underestimating it.
type campaigner struct {
	e     *redlock.Election
	value string
}

func (c campaigner) acquire(ctx context.Context) (time.Duration, error) {
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := c.e.Campaign(cctx, c.value); err != nil {
		return 0, err
	}
	return recipeTTL, nil
}
func (c campaigner) release(ctx context.Context) error { return c.e.Resign(ctx) }
func (c campaigner) id() string                        { return c.value }

// recipeElection: 8 campaigners under minority faults; at most one leads
// at a time.
func (s *suite) recipeElection(t *testing.T) {
	start := time.Now()
	f := factory(t, s.c.Pools(), redlock.WithTTL(recipeTTL))
	h := newHistory()
	var n atomic.Int64
	w := workload{
		clients: 8, names: []string{"r:leader"},
		newLocker: func(name string) locker {
			return campaigner{f.NewElection(name), fmt.Sprintf("c%d", n.Add(1))}
		},
		retryDelay: 20 * time.Millisecond, hold: holdUniform(5 * time.Millisecond),
	}
	stop, _ := w.start(h)
	note := s.minorityWindows(t, h)
	stop()
	overlaps := h.overlaps()
	r := h.figures("12 election, 8 campaigners, minority faults", w.clients)
	r.Note = fmt.Sprintf("leaders at once at most %d; acquisitions per window: %s", maxDepth(h.intervals(), "r:leader"), note)
	r.Backend, r.Wall = string(s.c.Backend()), time.Since(start)
	r.log(t)
	if len(overlaps) > 0 {
		t.Errorf("two leaders at once: %v", overlaps[0])
	}
}

// views are three quorums of the five nodes that no node is in more than
// twice: with 2 permits, per-node counting admits a holder on each.
var views = [][]int{{0, 1, 2}, {2, 3, 4}, {0, 1, 3}}

// viewPools are the suite's pools with every node outside view refusing
// connections: the client's side of a partition.
func (s *suite) viewPools(view []int) []redlock.Pool {
	out := make([]redlock.Pool, nodes)
	for i, p := range s.c.Pools() {
		fp := &faultpool.Pool{Inner: p}
		fp.Refuse.Store(true)
		for _, v := range view {
			if v == i {
				fp.Refuse.Store(false)
			}
		}
		out[i] = fp
	}
	return out
}

// countScript is the planted bug: a node admits a holder while it counts
// fewer than ARGV[2] holders of KEYS[1].
var countScript = redis.NewScript(1, `
if redis.call("SCARD", KEYS[1]) < tonumber(ARGV[2]) then
	redis.call("SADD", KEYS[1], ARGV[1])
	return 1
end
return 0`)

// plantedCountingSemaphore: three clients, each seeing one of views, take
// a 2-permit semaphore in turn and hold it. Counting per node admits all
// three, and the checker must say so; the library's Semaphore, one Redlock
// per permit, admits two in the same views.
func (s *suite) plantedCountingSemaphore(t *testing.T) {
	const permits = 2
	bug, lib := newHistory(), newHistory()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for k, view := range views {
		t1 := now()
		ok := 0
		for _, i := range view {
			conn, err := s.c.Pools()[i].GetContext(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := redis.Int(countScript.DoContext(ctx, conn, "p:count", fmt.Sprint("holder", k), permits)); n == 1 {
				ok++
			}
			conn.Close()
		}
		if ok >= 3 {
			bug.hold("p:sem", fmt.Sprint("holder", k), t1, t1+10*time.Second) // held to the end
		}
	}
	for k, view := range views {
		// Pool connections: faultpool's wrapped connections have no read
		// deadlines for a pipelined connection.
		f := factory(t, s.viewPools(view), redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(200*time.Millisecond), redlock.WithPipelining(false))
		sem := f.NewSemaphore("p:libsem", permits)
		t0 := now()
		v, err := sem.TryAcquire(ctx)
		if err == nil {
			lib.hold("p:sem", fmt.Sprint("holder", k), t0, now()+v)
		}
		t.Logf("library semaphore in view %v: %v", view, errOrHeld(err))
		if errors.Is(err, redlock.ErrNotVoting) {
			t.Errorf("the node guard, not the semaphore, refused the library in view %v: the control tests nothing", view)
		}
	}
	bugDepth, libDepth := maxDepth(bug.intervals(), "p:sem"), maxDepth(lib.intervals(), "p:sem")
	t.Logf("holders at once in views %v with %d permits: per-node counting %d, library %d", views, permits, bugDepth, libDepth)
	if bugDepth <= permits {
		t.Errorf("the checker missed the counting semaphore's %d holders", bugDepth)
	}
	if libDepth > permits || libDepth == 0 {
		t.Errorf("the library's semaphore had %d holders at once, want 1..%d", libDepth, permits)
	}
	for i := range nodes {
		_, _ = s.do(i, "DEL", "p:count")
	}
}

// plantedReader: a writer holds; a reader that registers without the
// writer check gets in, and the checker must flag the overlap; the
// library's ReadLock is refused.
func (s *suite) plantedReader(t *testing.T) {
	bug, lib := newHistory(), newHistory()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := factory(t, s.c.Pools(), redlock.WithTTL(5*time.Second))
	w := f.NewWriteLock("p:rw")
	v, err := w.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t1 := now()
	for _, h := range []*history{bug, lib} {
		h.hold("p:rw", w.Token(), t1, t1+v)
	}
	defer w.Release(ctx)
	ok := 0
	for i := range nodes { // the planted bug: SET and SADD, no look at the writer
		if _, err := s.do(i, "SET", "p:rw:rw:r:bug", "bug", "PX", 5000); err == nil {
			_, _ = s.do(i, "SADD", "p:rw:rw:readers", "bug")
			ok++
		}
	}
	if ok >= 3 {
		bug.hold("p:rw/r", "bug", now(), now()+4*time.Second)
	}
	r := f.NewReadLock("p:rw")
	t0 := now()
	if rv, err := r.TryAcquire(ctx); err == nil {
		lib.hold("p:rw/r", r.Token(), t0, now()+rv)
		defer r.Release(ctx)
	}
	bugCross, libCross := crossOverlaps(bug.intervals(), "p:rw", "p:rw/r"), crossOverlaps(lib.intervals(), "p:rw", "p:rw/r")
	t.Logf("writer/reader overlaps: reader without the writer check %d, library %d", bugCross, libCross)
	if bugCross == 0 {
		t.Error("the checker missed the reader registered under a writer")
	}
	if libCross != 0 {
		t.Errorf("the library's reader overlapped the writer %d times", libCross)
	}
	for i := range nodes {
		_, _ = s.do(i, "DEL", "p:rw:rw:r:bug", "p:rw:rw:readers")
	}
}

// errOrHeld describes an acquisition's outcome.
func errOrHeld(err error) string {
	if err == nil {
		return "held"
	}
	return err.Error()
}

// plantedPartialMultiLock: a Lock holds b. A multi-lock of {a,b} that
// sets its names one SET NX each on every node, and counts a node as
// granted when it set any of them, gets a on all five nodes and b on none
// and believes it holds both: the multi-lock checker must flag the overlap
// on b. The library's MultiLock of {a,b}, tried first, is refused and
// sets a on no node.
func (s *suite) plantedPartialMultiLock(t *testing.T) {
	bug, lib := newHistory(), newHistory()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := factory(t, s.c.Pools(), redlock.WithTTL(5*time.Second))
	l := f.NewLock("p:m:b")
	v, err := l.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t1 := now()
	for _, h := range []*history{bug, lib} {
		h.hold("p:m:b", l.Token(), t1, t1+v)
	}
	defer l.Release(ctx)
	m := f.NewMultiLock([]string{"p:m:a", "p:m:b"})
	t0 := now()
	mv, err := m.TryAcquire(ctx)
	if err == nil {
		lib.hold("p:m:a+p:m:b", m.Token(), t0, now()+mv)
		defer m.Release(ctx)
	}
	t.Logf("library multi-lock while b is held: %v", errOrHeld(err))
	for i, ks := range s.keys(t, "p:m:a") {
		if len(ks) > 0 {
			t.Errorf("the library's refused multi-lock left a on node %d", i)
		}
	}
	granted := 0
	for i := range nodes { // the planted bug: one SET per name, any success counts
		some := false
		for _, name := range []string{"p:m:a", "p:m:b"} {
			if reply, err := s.do(i, "SET", name, "bug", "NX", "PX", 5000); err == nil && reply != nil {
				some = true
			}
		}
		if some {
			granted++
		}
	}
	if granted >= 3 {
		bug.hold("p:m:a+p:m:b", "bug", now(), now()+4*time.Second)
	}
	bugOv, libOv := multiLockOverlaps(bug.intervals()), multiLockOverlaps(lib.intervals())
	t.Logf("overlaps on a name: multi-lock counting partial grants (granted on %d nodes) %d, library %d", granted, len(bugOv), len(libOv))
	if len(bugOv) == 0 {
		t.Error("the checker missed the multi-lock that holds b beside the Lock")
	}
	for _, o := range libOv {
		t.Errorf("library overlap: %v", o)
	}
	for i := range nodes {
		_, _ = s.do(i, "DEL", "p:m:a")
	}
}

// plantedMinorityLeader: a leader campaigns seeing only nodes {0,1,2} and
// leads on those three. A campaigner that counts itself leader once two
// nodes, a minority of five, granted its key wins nodes 3 and 4, and the
// election checker must flag two leaders at once. The library's Election,
// seeing every node, is refused (TryAcquire: ErrNotAcquired).
func (s *suite) plantedMinorityLeader(t *testing.T) {
	bug, lib := newHistory(), newHistory()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lf := factory(t, s.viewPools([]int{0, 1, 2}), redlock.WithTTL(5*time.Second), redlock.WithNodeTimeout(200*time.Millisecond), redlock.WithPipelining(false))
	leader := lf.NewElection("p:leader")
	v, err := leader.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t1 := now()
	for _, h := range []*history{bug, lib} {
		h.hold("p:leader", leader.Token(), t1, t1+v)
	}
	defer leader.Release(ctx)
	won := 0
	for i := range nodes { // the planted bug: a quorum of nodes/2
		if reply, err := s.do(i, "SET", "p:leader", "bug|bug", "NX", "PX", 5000); err == nil && reply != nil {
			won++
		}
	}
	if won >= nodes/2 {
		bug.hold("p:leader", "bug", now(), now()+4*time.Second)
	}
	e := factory(t, s.c.Pools(), redlock.WithTTL(5*time.Second)).NewElection("p:leader")
	t0 := now()
	ev, err := e.TryAcquire(ctx)
	if err == nil {
		lib.hold("p:leader", e.Token(), t0, now()+ev)
		defer e.Release(ctx)
	} else if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Errorf("the library's campaign = %v, want ErrNotAcquired", err)
	}
	t.Logf("library campaign beside the leader of {0,1,2} and the minority leader: %v", errOrHeld(err))
	bugOv, libOv := bug.overlaps(), lib.overlaps()
	t.Logf("two leaders at once: minority campaigner (won %d of %d nodes) %d (%d at most at once), library %d",
		won, nodes, len(bugOv), maxDepth(bug.intervals(), "p:leader"), len(libOv))
	if len(bugOv) == 0 {
		t.Error("the checker missed the minority leader beside the real one")
	}
	for _, o := range libOv {
		t.Errorf("library overlap: %v", o)
	}
	for i := range nodes {
		_, _ = s.do(i, "DEL", "p:leader")
	}
}
